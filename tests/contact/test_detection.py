"""Contact geometry and detection (simtk.multibody.contact.geometry, ._detection, core/contact.pxi).

Every narrow phase is checked against references written here in numpy, independent of the kernels:

- the support function of each shape, from its definition, gives the penetration depth as
  ``min over unit n of h_1(n) + h_2(-n)``; a brute-force minimum over 4000 directions refined by
  Nelder-Mead is an upper bound of the true depth, so a reported depth above it (by more than the
  method's tolerance) is a wrong answer, and the reported normal must achieve the reported depth
  (``h_1(n) + h_2(-n) = depth``), so a reported depth below the true one is one too;
- the signed distance of each shape: the two deepest points (``p +- depth n / 2``) lie on the
  surfaces, and after pulling surface 2 out along n by slightly more than depth no point of a dense
  sample of either surface is inside the other.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from simtk._core_contact import CONTACT_EPA_REL_TOL, CONTACT_SHAPES
from simtk.multibody.contact._detection import Contacts, detect, detect_unchecked
from simtk.multibody.contact.geometry import ContactGeometry as CG
from tolerances import EPS, tol

KINDS = ["HalfSpace", "Sphere", "Capsule", "Brick", "Ellipsoid"]
CODE = {k: CONTACT_SHAPES[k][0] for k in KINDS}
PAIRS = [(a, b) for i, a in enumerate(KINDS) for b in KINDS[i:] if (a, b) != ("HalfSpace", "HalfSpace")]
SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
FAST = settings(max_examples=20, deadline=None)

#: Round-off of the closed-form narrow phases: a few dozen flops on numbers of the scene's size,
#: through a square root near a tangency at worst.
MARGIN = 1024


# ---------------------------------------------------------------------------------------------
# references, written from the definitions
# ---------------------------------------------------------------------------------------------
def random_rotation(rng) -> np.ndarray:
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def random_geometry(rng, kind: str) -> CG:
    if kind == "HalfSpace":
        return CG.HalfSpace()
    if kind == "Sphere":
        return CG.Sphere(rng.uniform(0.2, 1.0))
    if kind == "Capsule":
        return CG.Capsule(rng.uniform(0.1, 0.6), rng.uniform(0.1, 1.0))
    if kind == "Brick":
        return CG.Brick(rng.uniform(0.15, 1.0, 3))
    return CG.Ellipsoid(rng.uniform(0.2, 1.0, 3))


def support(g: CG, R, p, n) -> np.ndarray:
    """h(n) = max over the shape of x.n, for directions n (m, 3) in Ground (the half-space only along
    its outward normal, where it is the plane's offset)."""
    n = np.atleast_2d(n)
    d = n @ R                       # R^T n for each row
    h = n @ p
    q = g.params
    if g.kind == "HalfSpace":
        return h
    if g.kind == "Sphere":
        return h + q[0] * np.linalg.norm(n, axis=1)
    if g.kind == "Capsule":
        return h + q[0] * np.linalg.norm(n, axis=1) + q[1] * np.abs(d[:, 2])
    if g.kind == "Brick":
        return h + np.abs(d) @ np.array(q)
    return h + np.sqrt((d * d) @ (np.array(q) ** 2))


def overlap_fn(g1, X1, g2, X2):
    """n -> h_1(n) + h_2(-n); with a half-space first, only its normal counts."""
    def f(n):
        return support(g1, *X1, n) + support(g2, *X2, -np.atleast_2d(n))
    return f


def fibonacci(m: int) -> np.ndarray:
    i = np.arange(m) + 0.5
    z = 1 - 2 * i / m
    phi = math.pi * (1 + 5 ** 0.5) * i
    r = np.sqrt(1 - z * z)
    return np.stack([r * np.cos(phi), r * np.sin(phi), z], axis=1)


def reference_depth(g1, X1, g2, X2) -> tuple[float, float]:
    """(brute-force least overlap over 4000 directions, the same refined by Nelder-Mead): both are
    upper bounds of the true depth (or of minus the gap). For a half-space the normal is fixed."""
    f = overlap_fn(g1, X1, g2, X2)
    if g1.kind == "HalfSpace":
        v = float(f(-X1[0][:, 0])[0])
        return v, v
    if g2.kind == "HalfSpace":
        v = float(f(X2[0][:, 0])[0])
        return v, v
    dirs = fibonacci(4000)
    vals = f(dirs)
    coarse = float(vals.min())
    best = coarse
    for k in np.argsort(vals)[:4]:
        n0 = dirs[k]
        e1 = np.cross(n0, [1.0, 0, 0] if abs(n0[0]) < 0.9 else [0, 1.0, 0])
        e1 /= np.linalg.norm(e1)
        e2 = np.cross(n0, e1)

        def g(t):
            n = n0 + t[0] * e1 + t[1] * e2
            return float(f(n / np.linalg.norm(n))[0])
        r = minimize(g, [0.0, 0.0], method="Nelder-Mead",
                     # refine until the support values stop changing at round-off of their scale
                     options=dict(xatol=1e-12, fatol=4 * EPS * max(1.0, abs(coarse)), maxiter=4000,
                                  initial_simplex=[[0, 0], [0.03, 0], [0, 0.03]]))
        best = min(best, float(r.fun))
    return coarse, best


def inside_depth(g: CG, R, p, x) -> np.ndarray:
    """Signed distance, positive inside, of points x (m, 3) in Ground."""
    y = (np.atleast_2d(x) - p) @ R    # R^T (x - p)
    q = np.array(g.params)
    if g.kind == "HalfSpace":
        return y[:, 0]
    if g.kind == "Sphere":
        return q[0] - np.linalg.norm(y, axis=1)
    if g.kind == "Capsule":
        z = np.clip(y[:, 2], -q[1], q[1])
        return q[0] - np.linalg.norm(y - np.outer(z, [0, 0, 1]), axis=1)
    if g.kind == "Brick":
        e = np.abs(y) - q
        out = np.linalg.norm(np.maximum(e, 0), axis=1)
        return np.where(out > 0, -out, -e.max(axis=1))
    # ellipsoid: the implicit function scaled to a length (exact sign, |error| ~ distance^2)
    s = np.linalg.norm(y / q, axis=1)
    return (1 - s) * q.min()


def surface_points(g: CG, R, p, m: int = 4000) -> np.ndarray:
    """A dense sample of the shape's surface in Ground (none for a half-space)."""
    q = np.array(g.params)
    if g.kind == "HalfSpace":
        return np.zeros((0, 3))
    u = fibonacci(m)
    if g.kind == "Sphere":
        y = q[0] * u
    elif g.kind == "Ellipsoid":
        y = u * q
    elif g.kind == "Capsule":
        t = np.linspace(-q[1], q[1], 60)
        a = np.linspace(0, 2 * math.pi, m // 60, endpoint=False)
        side = np.stack([q[0] * np.cos(a)[None, :].repeat(60, 0), q[0] * np.sin(a)[None, :].repeat(60, 0),
                         t[:, None].repeat(a.size, 1)], axis=-1).reshape(-1, 3)
        caps = q[0] * u + np.outer(np.sign(u[:, 2]), [0, 0, q[1]])
        y = np.vstack([side, caps])
    else:
        k = int(math.sqrt(m / 6)) + 2
        s = np.linspace(-1, 1, k)
        a, b = np.meshgrid(s, s)
        pts = []
        for ax in range(3):
            for sg in (-1, 1):
                f = np.zeros((a.size, 3))
                f[:, ax] = sg
                f[:, (ax + 1) % 3] = a.ravel()
                f[:, (ax + 2) % 3] = b.ravel()
                pts.append(f * q)
        y = np.vstack(pts)
    return y @ R.T + p


def call(geoms, Rs, ps, clique=None) -> Contacts:
    ns = len(geoms)
    return detect(np.array([g.shape_code for g in geoms], np.int32), np.array([g.params for g in geoms]),
                  np.array(Rs), np.array(ps), np.full(ns, -1, np.int32) if clique is None else np.asarray(clique))


def random_pair(rng, k1: str, k2: str, spread: float = 1.0):
    g1, g2 = random_geometry(rng, k1), random_geometry(rng, k2)
    R1, R2 = random_rotation(rng), random_rotation(rng)
    p1 = rng.uniform(-0.2, 0.2, 3)
    p2 = p1 + rng.uniform(-spread, spread, 3)
    if k1 == "HalfSpace":       # put the other surface near the plane
        p2 = p1 + R1 @ np.array([rng.uniform(-0.6, 0.6), *rng.uniform(-2, 2, 2)])
    return g1, (R1, p1), g2, (R2, p2)


def pair_tolerance(k1: str, k2: str, size: float) -> float:
    """The method's accuracy: EPA's stopping tolerance for the ellipsoid pairs, else round-off."""
    if "Ellipsoid" in (k1, k2) and "HalfSpace" not in (k1, k2):
        return 4 * CONTACT_EPA_REL_TOL * size
    return tol(size, MARGIN)


def size_of(*gs) -> float:
    return max(max(g.params) for g in gs if g.kind != "HalfSpace") * 2 + 1.0


# ---------------------------------------------------------------------------------------------
# geometry
# ---------------------------------------------------------------------------------------------
def test_geometry_values_and_repr():
    s = CG.Sphere(0.5)
    assert s.kind == "Sphere" and s.params == (0.5, 0.0, 0.0) and s.radius == 0.5
    assert s.shape_code == CODE["Sphere"]
    c = CG.Capsule(0.1, 0.3)
    assert c.params == (0.1, 0.3, 0.0) and c.half_length == 0.3
    assert CG.Brick([1, 2, 3]).half_lengths == (1.0, 2.0, 3.0)
    assert CG.Ellipsoid([1, 2, 3]).radii == (1.0, 2.0, 3.0)
    assert CG.HalfSpace().params == (0.0, 0.0, 0.0)
    for g in (s, c, CG.Brick([1, 2, 3]), CG.Ellipsoid([1, 2, 3]), CG.HalfSpace()):
        assert eval(repr(g), {"ContactGeometry": CG}) == g
        assert hash(g) == hash(eval(repr(g), {"ContactGeometry": CG}))
    assert CG.Sphere(1) != CG.Sphere(2)
    with pytest.raises(AttributeError, match="immutable"):
        s.foo = 1
    with pytest.raises(AttributeError, match="no half_lengths"):
        _ = s.half_lengths


@pytest.mark.parametrize("make, match", [
    (lambda: CG.Sphere(0), "Sphere radius must be finite and > 0"),
    (lambda: CG.Sphere(-1), "Sphere radius"),
    (lambda: CG.Sphere(float("nan")), "Sphere radius"),
    (lambda: CG.Capsule(0.1, 0), "Capsule half_length"),
    (lambda: CG.Brick([1, 2]), "Brick half_lengths must have three entries"),
    (lambda: CG.Brick([1, 0, 1]), r"Brick half_lengths\[1\]"),
    (lambda: CG.Ellipsoid([1, 1, math.inf]), r"Ellipsoid radii\[2\]"),
])
def test_geometry_refuses_bad_sizes(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_geometry_refuses_non_numbers():
    with pytest.raises(TypeError, match="Sphere radius must be a number"):
        CG.Sphere("big")
    with pytest.raises(TypeError, match="must be a number"):
        CG.Sphere(True)
    with pytest.raises(TypeError, match="ContactGeometry.HalfSpace"):
        CG()


# ---------------------------------------------------------------------------------------------
# exact cases
# ---------------------------------------------------------------------------------------------
I3 = np.eye(3)
# a half-space whose outward normal is +y (its frame's x axis along -y)
R_UP = np.array([[0.0, 1, 0], [-1, 0, 0], [0, 0, 1]])


def test_sphere_on_half_space_and_sphere_on_sphere():
    c = call([CG.HalfSpace(), CG.Sphere(0.5), CG.Sphere(0.25)], [R_UP, I3, I3],
             [[0, 0, 0], [1, 0.4, 2], [1, 1.0, 2]])
    assert list(c.surf1) == [0, 1] and list(c.surf2) == [1, 2]
    np.testing.assert_allclose(c.depth, [0.1, 0.15], rtol=0, atol=tol(2))
    np.testing.assert_allclose(c.n_G, [[0, 1, 0], [0, 1, 0]], atol=tol(1))
    np.testing.assert_allclose(c.p_G, [[1, -0.05, 2], [1, 0.9 - 0.075 + 0.0, 2]], atol=tol(2))
    assert c.R1[0] == math.inf and c.R2[0] == 0.5 and c.R1[1] == 0.5 and c.R2[1] == 0.25


def test_ellipsoid_on_half_space_exact():
    # ellipsoid rotated about z by t: the lowest point is at depth sqrt(a^2 sin^2 t + b^2 cos^2 t) - y0
    a, b, cc, t, y0 = 0.5, 0.2, 0.3, 0.4, 0.25
    Rz = np.array([[math.cos(t), -math.sin(t), 0], [math.sin(t), math.cos(t), 0], [0, 0, 1]])
    c = call([CG.HalfSpace(), CG.Ellipsoid([a, b, cc])], [R_UP, Rz], [[0, 0, 0], [0, y0, 0]])
    h = math.sqrt(a * a * math.sin(t) ** 2 + b * b * math.cos(t) ** 2)
    assert abs(c.depth[0] - (h - y0)) <= tol(1, 64)
    assert abs(c.R2[0] - a * b * cc / h ** 2) <= tol(1, 64)


def test_brick_on_half_space_gives_the_penetrating_vertices_of_its_lowest_face():
    # Simbody's BrickHalfSpacePenalty: the face most antiparallel to the plane's normal, one contact
    # at each of its vertices below the plane, midway between the vertex and the plane
    half = np.array([0.5, 0.1, 0.3])
    c = call([CG.HalfSpace(), CG.Brick(half)], [R_UP, I3], [[0, 0, 0], [2, 0.05, 1]])
    assert len(c) == 4 and set(c.surf1) == {0} and set(c.surf2) == {1}
    corners = [[2 + sx * 0.5, -0.025, 1 + sz * 0.3] for sx in (-1, 1) for sz in (-1, 1)]
    order = np.lexsort((c.p_G[:, 2], c.p_G[:, 0]))
    np.testing.assert_allclose(c.p_G[order], corners, atol=tol(2))
    np.testing.assert_allclose(c.depth, 0.05, rtol=0, atol=tol(1))
    np.testing.assert_allclose(c.n_G, [[0, 1, 0]] * 4, atol=tol(1))
    assert np.all(np.isinf(c.R1)) and np.all(np.isinf(c.R2))
    t = 0.1     # tilted about z: only the two vertices of the lowest edge are below the plane
    Rz = np.array([[math.cos(t), -math.sin(t), 0], [math.sin(t), math.cos(t), 0], [0, 0, 1]])
    c = call([CG.HalfSpace(), CG.Brick(half)], [R_UP, Rz], [[0, 0, 0], [2, 0.1, 1]])
    assert len(c) == 2
    for sz in (-1, 1):
        v = np.array([2, 0.1, 1]) + Rz @ (half * [-1, -1, sz])
        k = int(np.argmin(np.abs(c.p_G[:, 2] - v[2])))
        assert abs(c.depth[k] + v[1]) <= tol(2)
        np.testing.assert_allclose(c.p_G[k], v + [0, -v[1] / 2, 0], atol=tol(4))


def test_capsule_on_half_space_rests_on_its_end_caps():
    Rx = np.array([[0.0, 0, 1], [0, 1, 0], [-1, 0, 0]])     # capsule z axis along Ground x
    c = call([CG.HalfSpace(), CG.Capsule(0.1, 1.0)], [R_UP, Rx], [[0, 0, 0], [0.5, 0.08, 2]])
    assert len(c) == 2
    np.testing.assert_allclose(np.sort(c.p_G[:, 0]), [-0.5, 1.5], atol=tol(2))
    np.testing.assert_allclose(c.p_G[:, 1:], [[-0.01, 2]] * 2, atol=tol(2))
    np.testing.assert_allclose(c.depth, 0.02, rtol=0, atol=tol(1))
    assert np.all(c.R2 == 0.1) and np.all(np.isinf(c.R1))
    t = 0.01    # tilted: the ends' depths are r - (y0 -+ L sin t), L sin t ~ 0.01
    Rt = np.array([[math.cos(t), -math.sin(t), 0], [math.sin(t), math.cos(t), 0], [0, 0, 1]]) @ Rx
    c = call([CG.HalfSpace(), CG.Capsule(0.1, 1.0)], [R_UP, Rt], [[0, 0, 0], [0.5, 0.085, 2]])
    np.testing.assert_allclose(np.sort(c.depth), [0.1 - 0.085 - math.sin(t), 0.1 - 0.085 + math.sin(t)],
                               rtol=0, atol=tol(2))
    c = call([CG.HalfSpace(), CG.Capsule(0.1, 1.0)], [R_UP, Rt], [[0, 0, 0], [0.5, 0.095, 2]])
    assert len(c) == 1 and abs(c.depth[0] - (0.1 - 0.095 + math.sin(t))) <= tol(2)


def test_capsule_lying_on_brick_touches_at_the_ends_of_the_overlap():
    # capsule along x from -1 to 1 (radius 0.1), brick top face y = 0 over x in [0.5, 1.5]: the
    # spheres of radius 0.1 centred at x = 0.5 (the face's edge) and x = 1 (the capsule's end)
    Rx = np.array([[0.0, 0, 1], [0, 1, 0], [-1, 0, 0]])     # capsule z axis along Ground x
    c = call([CG.Capsule(0.1, 1.0), CG.Brick([0.5, 0.5, 0.5])], [Rx, I3], [[0, 0.08, 0], [1.0, -0.5, 0]])
    assert len(c) == 2
    np.testing.assert_allclose(c.depth, 0.02, rtol=0, atol=tol(2))
    np.testing.assert_allclose(c.n_G, [[0, -1, 0]] * 2, atol=tol(1))
    np.testing.assert_allclose(c.p_G[np.argsort(c.p_G[:, 0])], [[0.5, -0.01, 0], [1.0, -0.01, 0]], atol=tol(2, 256))
    assert np.all(c.R1 == 0.1) and np.all(np.isinf(c.R2))


def test_small_brick_on_the_corner_of_a_big_one_touches_at_the_corners_of_the_overlap():
    c = call([CG.Brick([1, 1, 1]), CG.Brick([0.2, 0.2, 0.2])], [I3, I3], [[0, 0, 0], [0.9, 1.15, -0.9]])
    assert len(c) == 4
    np.testing.assert_allclose(c.depth, 0.05, rtol=0, atol=tol(2))
    np.testing.assert_allclose(c.n_G, [[0, 1, 0]] * 4, atol=tol(1))
    order = np.lexsort((c.p_G[:, 2], c.p_G[:, 0]))
    corners = [[x, 0.975, z] for x in (0.7, 1.0) for z in (-1.0, -0.7)]
    np.testing.assert_allclose(c.p_G[order], corners, atol=tol(2, 256))


def test_brick_tilted_on_a_brick_face_keeps_its_lowest_face():
    # a small brick tilted by 1e-3 about x over the big one's top face: its bottom face's four
    # vertices all penetrate, by 0.05 -+ 0.2 sin(1e-3), and a single contact would let it rock
    t = 1e-3
    Rt = np.array([[1, 0, 0], [0, math.cos(t), -math.sin(t)], [0, math.sin(t), math.cos(t)]])
    c = call([CG.Brick([1, 1, 1]), CG.Brick([0.2, 0.2, 0.2])], [I3, Rt], [[0, 0, 0], [0.0, 1.15, 0.0]])
    assert len(c) == 4
    lowest = np.array([0, 1.15, 0]) + (np.array([[sx, -1, sz] for sx in (-1, 1) for sz in (-1, 1)]) * 0.2) @ Rt.T
    np.testing.assert_allclose(np.sort(c.depth), np.sort(1.0 - lowest[:, 1]), rtol=0, atol=tol(2, 64))


def test_crossing_capsules_meet_at_the_crossing():
    Rx = np.array([[0.0, 0, 1], [0, 1, 0], [-1, 0, 0]])
    c = call([CG.Capsule(0.1, 1.0), CG.Capsule(0.2, 1.0)], [Rx, I3], [[0, 0, 0], [0.3, 0.25, -0.4]])
    assert abs(c.depth[0] - 0.05) <= tol(2)
    np.testing.assert_allclose(c.p_G[0], [0.3, 0.1 - 0.025, 0], atol=tol(2, 256))


def test_sphere_against_ellipsoid_to_the_epa_tolerance():
    # a sphere over the ellipsoid's x pole, closer than the pole's centres of curvature: depth d
    a, b, cc, r, d = 0.6, 0.5, 0.45, 0.2, 0.03
    c = call([CG.Sphere(r), CG.Ellipsoid([a, b, cc])], [I3, I3],
             [[a + r - d, 0, 0], [0, 0, 0]])
    assert abs(c.depth[0] - d) <= 4 * CONTACT_EPA_REL_TOL * (r + a)
    np.testing.assert_allclose(c.n_G[0], [-1, 0, 0], atol=1e-4)
    assert abs(c.R2[0] - a * b * cc / a ** 2) <= 1e-6


# ---------------------------------------------------------------------------------------------
# every pair against the brute-force references
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("k1, k2", PAIRS)
@FAST
@given(seed=SEEDS)
def test_pair_against_brute_force(k1, k2, seed):
    rng = np.random.default_rng(seed)
    g1, X1, g2, X2 = random_pair(rng, k1, k2)
    size = size_of(g1, g2) + float(np.abs(X2[1]).max())
    eps = pair_tolerance(k1, k2, size)
    coarse, ref = reference_depth(g1, X1, g2, X2)
    c = call([g1, g2], [X1[0], X2[0]], [X1[1], X2[1]])
    if coarse < -1e-9 * size:
        assert len(c) == 0, f"apart by at least {-coarse:.3g} but a contact was reported: {c.depth}"
        return
    if ref <= 1e-6 * size:
        return          # touching within the references' resolution: either answer is fine
    assert len(c) >= 1, f"overlap {ref:.6g} but no contact"
    k = int(np.argmax(c.depth))             # a flat pair's manifold: its deepest contact is the pair's
    n, depth, p = c.n_G[k], c.depth[k], c.p_G[k]
    assert np.all(c.n_G == n) and np.all(c.surf1 == 0) and np.all(c.surf2 == 1)
    assert abs(np.linalg.norm(n) - 1) <= tol(1, 16)
    f = overlap_fn(g1, X1, g2, X2)
    # the normal achieves the depth (so the depth is not below the true one) ...
    assert abs(float(f(n)[0]) - depth) <= tol(size, MARGIN), "depth differs from h_1(n) + h_2(-n)"
    # ... and no direction does better (so it is not above it)
    assert depth <= ref + eps, f"depth {depth!r} exceeds the brute-force minimum {ref!r} by {depth - ref:.3g}"
    # the deepest points lie on their surfaces
    on_surface = eps if eps > tol(size, MARGIN) else tol(size, 4 * MARGIN)
    if "Ellipsoid" in (k1, k2) and "HalfSpace" not in (k1, k2):
        on_surface = math.sqrt(eps * size)      # the normal's error is ~ sqrt(depth error x radius)
    a, b = p + depth / 2 * n, p - depth / 2 * n
    assert abs(inside_depth(g1, *X1, a)[0]) <= on_surface, "surface 1's deepest point is off its surface"
    assert abs(inside_depth(g2, *X2, b)[0]) <= on_surface, "surface 2's deepest point is off its surface"
    # the other contacts of a manifold: shallower, each with its two points within both surfaces
    for i in range(len(c)):
        assert 0 < c.depth[i] <= depth
        ai, bi = c.p_G[i] + c.depth[i] / 2 * n, c.p_G[i] - c.depth[i] / 2 * n
        assert inside_depth(g1, *X1, ai)[0] >= -on_surface and inside_depth(g2, *X2, bi)[0] >= -on_surface
    # pulled apart by a little more than depth along n they are apart (dense samples)
    X2s = (X2[0], X2[1] + (depth + 1e-6 * size) * n)
    assert inside_depth(g1, *X1, surface_points(g2, *X2s)).max(initial=-1) < 0
    assert inside_depth(g2, *X2s, surface_points(g1, *X1)).max(initial=-1) < 0
    # symmetry: the swapped pair flips the normal and swaps the radii
    s = call([g2, g1], [X2[0], X1[0]], [X2[1], X1[1]])
    assert len(s) == len(c)
    j = int(np.argmax(s.depth))
    assert abs(s.depth[j] - depth) <= tol(size, MARGIN) + (eps if eps > tol(size, MARGIN) else 0)
    np.testing.assert_allclose(s.n_G[j], -n, atol=max(tol(1, MARGIN), math.sqrt(eps)))
    assert (s.R1[j], s.R2[j]) == pytest.approx((c.R2[k], c.R1[k]), rel=1e-6)


# ---------------------------------------------------------------------------------------------
# scenes: separation, cliques, broad phase
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("k1, k2", PAIRS)
@FAST
@given(seed=SEEDS)
def test_separated_pairs_give_no_contact(k1, k2, seed):
    rng = np.random.default_rng(seed)
    g1, X1, g2, X2 = random_pair(rng, k1, k2)
    c = call([g1, g2], [X1[0], X2[0]], [X1[1], X2[1]])
    if len(c) == 0:
        return
    size = size_of(g1, g2) + float(np.abs(X2[1]).max())
    gap = 1e-4 * size + 2 * pair_tolerance(k1, k2, size)
    k = int(np.argmax(c.depth))
    moved = X2[1] + (c.depth[k] + gap) * c.n_G[k]
    assert len(call([g1, g2], [X1[0], X2[0]], [X1[1], moved])) == 0
    moved = X2[1] + (c.depth[k] - gap) * c.n_G[k]
    assert len(call([g1, g2], [X1[0], X2[0]], [X1[1], moved])) >= 1


def random_scene(rng, ns: int, box: float):
    kinds = rng.choice(KINDS[1:], size=ns)
    geoms = [random_geometry(rng, k) for k in kinds]
    geoms[0] = CG.HalfSpace()
    geoms[ns // 2] = CG.HalfSpace()
    Rs = [random_rotation(rng) for _ in range(ns)]
    ps = rng.uniform(-box, box, (ns, 3))
    return geoms, Rs, ps


def test_cliques_filter_pairs():
    geoms = [CG.HalfSpace(), CG.Sphere(0.5), CG.Sphere(0.5), CG.Brick([0.4, 0.4, 0.4])]
    Rs = [R_UP, I3, I3, I3]
    ps = [[0, 0, 0], [0, 0.4, 0], [0, 1.1, 0], [0.5, 0.3, 0]]
    all_pairs = {(int(a), int(b)) for a, b in zip(*(lambda c: (c.surf1, c.surf2))(call(geoms, Rs, ps)))}
    assert all_pairs == {(0, 1), (0, 3), (1, 2), (1, 3), (2, 3)}
    c = call(geoms, Rs, ps, clique=[0, 0, -1, 1])
    assert {(int(a), int(b)) for a, b in zip(c.surf1, c.surf2)} == {(1, 2), (1, 3), (2, 3), (0, 3)}
    c = call(geoms, Rs, ps, clique=[-1, 2, 2, 2])
    assert {(int(a), int(b)) for a, b in zip(c.surf1, c.surf2)} == {(0, 1), (0, 3)}


@settings(max_examples=3, deadline=None)
@given(seed=SEEDS)
def test_broad_phase_finds_exactly_the_all_pairs_contacts(seed):
    rng = np.random.default_rng(seed)
    ns = 120  # (with the scene's side scaled so that the density, hence the contacts per shape, stays)
    geoms, Rs, ps = random_scene(rng, ns, 5.0 * (120 / 200) ** (1 / 3))
    clique = np.where(rng.uniform(size=ns) < 0.2, rng.integers(0, 5, ns), -1).astype(np.int32)
    c = call(geoms, Rs, ps, clique)
    assert len(c) > 20
    found: dict = {}
    for k, (a, b) in enumerate(zip(c.surf1, c.surf2)):
        found.setdefault((int(a), int(b)), []).append(k)
    expected = {}
    for i in range(ns):
        for j in range(i + 1, ns):
            if clique[i] >= 0 and clique[i] == clique[j]:
                continue
            if geoms[i].kind == "HalfSpace" and geoms[j].kind == "HalfSpace":
                continue
            pc = call([geoms[i], geoms[j]], [Rs[i], Rs[j]], [ps[i], ps[j]])
            if len(pc):
                expected[(i, j)] = pc
    assert set(found) == set(expected)
    for key, pc in expected.items():
        k = found[key]      # the pair's contacts (a manifold's several), in the same order
        assert np.array_equal(c.depth[k], pc.depth) and np.array_equal(c.n_G[k], pc.n_G)
        assert np.array_equal(c.p_G[k], pc.p_G)
    assert np.all(c.surf1 < c.surf2) and np.all(c.depth > 0)
    order = np.lexsort((c.surf2, c.surf1))
    assert np.array_equal(order, np.arange(len(c)))


def test_the_unchecked_path_gives_the_checked_result():
    """What a contact force calls in the time loop (no argument checks) finds the same contacts bitwise."""
    rng = np.random.default_rng(11)
    geoms, Rs, ps = random_scene(rng, 60, 3.0)
    codes = np.array([g.shape_code for g in geoms], dtype=np.int32)
    params = np.array([g.params for g in geoms], dtype=np.float64)
    R, p = np.ascontiguousarray(Rs, dtype=np.float64), np.ascontiguousarray(ps, dtype=np.float64)
    clique = np.full(60, -1, dtype=np.int32)
    checked, unchecked = detect(codes, params, R, p, clique), detect_unchecked(codes, params, R, p, clique)
    assert len(checked) > 5
    for name in ("surf1", "surf2", "p_G", "n_G", "depth", "R1", "R2"):
        assert np.array_equal(getattr(checked, name), getattr(unchecked, name)), name


def test_result_is_read_only_and_empty_scenes_work():
    c = call([CG.Sphere(1)], [I3], [[0, 0, 0]])
    assert len(c) == 0 and c.p_G.shape == (0, 3)
    c = call([CG.Sphere(1), CG.Sphere(1)], [I3, I3], [[0, 0, 0], [1, 0, 0]])
    assert "1 contacts: (0, 1)" in repr(c)
    with pytest.raises(ValueError):
        c.depth[0] = 1.0


# ---------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------
def _good():
    return (np.array([1, 1], np.int32), np.array([[1.0, 0, 0], [1.0, 0, 0]]), np.array([I3, I3]),
            np.zeros((2, 3)), np.array([-1, -1], np.int32))


@pytest.mark.parametrize("which, value, error, match", [
    (0, np.array([1, 9], np.int32), ValueError, r"codes\[1\] = 9 is not a contact shape code"),
    (0, np.array([1.0, 1.0]), TypeError, "codes: expected integers"),
    (0, np.array([[1, 1]], np.int32), ValueError, "codes: expected a 1-d array"),
    (1, np.array([[1.0, 0, 0], [-1.0, 0, 0]]), ValueError, r"params\[1, 0\] = -1.0 of a Sphere must be > 0"),
    (1, np.array([[1.0, 0, 0], [1.0, 2.0, 0]]), ValueError, r"params\[1, 1\] = 2.0 of a Sphere must be 0 \(unused\)"),
    (1, np.zeros((3, 3)), ValueError, r"params: expected shape \(2, 3\)"),
    (2, np.array([I3, 2 * I3]), ValueError, r"R_GS\[1\] is not a rotation matrix"),
    (2, np.array([I3, -I3]), ValueError, r"R_GS\[1\] is not a rotation matrix"),
    (3, np.array([[0.0, 0, 0], [np.nan, 0, 0]]), ValueError, r"p_GS: entry \(1, 0\) is not finite"),
    (4, np.array([-1], np.int32), ValueError, r"clique: expected shape \(2,\)"),
    (4, np.array([0.5, 1.0]), TypeError, "clique: expected integers"),
])
def test_bad_input_is_refused_clearly(which, value, error, match):
    args = list(_good())
    args[which] = value
    with pytest.raises(error, match=match):
        detect(*args)


@pytest.mark.parametrize("far", [1e150, 1e300, 1.7e308])
def test_a_scene_whose_extent_overflows_still_finds_the_near_pairs(far):
    """Spheres touching near the origin and one sphere far away, at coordinates whose spread overflows
    the broad phase's arithmetic to inf (its strips come out NaN wide): the touching pair is still
    found, exactly as without the far sphere, and nothing else is reported."""
    near = [CG.Sphere(0.1), CG.Sphere(0.1), CG.HalfSpace()]  # the half-space x < -5, out of reach
    R = [np.eye(3), np.eye(3), np.diag([-1.0, -1.0, 1.0]), np.eye(3)]
    ps = [np.zeros(3), np.array([0.15, 0.0, 0.0]), np.array([-5.0, 0.0, 0.0])]
    alone = call(near, R[:3], ps)
    c = call(near + [CG.Sphere(0.1)], R, ps + [np.array([far, -far, far])])
    assert len(alone) == 1 and (int(alone.surf1[0]), int(alone.surf2[0])) == (0, 1)
    assert len(c) == 1 and np.array_equal(c.depth, alone.depth) and np.array_equal(c.p_G, alone.p_G)
