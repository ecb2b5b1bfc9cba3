"""tetrahedralize: a closed surface filled with tetrahedra by gmsh (extra [fem]), checked by the divergence
theorem, the mesh's own boundary and the refusals of open or misoriented surfaces."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial import ConvexHull

from simtk.deformable import DeformableBody, tetrahedralize
from simtk.multibody import MultibodySystem, SimbodyMatterSubsystem
from tolerances import EPS

pytest.importorskip("gmsh")


def sphere_surface(n: int = 150, seed: int = 3):
    """Points on the unit sphere (radius 0.1 m) and their hull's triangles, oriented outward."""
    rng = np.random.default_rng(seed)
    V = rng.standard_normal((n, 3))
    V = 0.1 * V / np.linalg.norm(V, axis=1, keepdims=True)
    F = ConvexHull(V).simplices.copy()
    a, b, c = V[F[:, 0]], V[F[:, 1]], V[F[:, 2]]
    inward = np.einsum("ij,ij->i", np.cross(b - a, c - a), (a + b + c) / 3) < 0
    F[inward] = F[inward][:, [0, 2, 1]]
    return V, F


def enclosed_volume(V, F) -> float:
    a, b, c = V[F[:, 0]], V[F[:, 1]], V[F[:, 2]]
    return float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6)  # the divergence theorem


def boundary_faces(tets) -> set:
    faces: dict = {}
    for t in tets:
        for f in ((t[0], t[1], t[2]), (t[0], t[1], t[3]), (t[0], t[2], t[3]), (t[1], t[2], t[3])):
            key = tuple(sorted(int(i) for i in f))
            faces[key] = faces.get(key, 0) + 1
    return {k for k, n in faces.items() if n == 1}


def test_the_tetrahedra_fill_the_surface_exactly():
    """The input vertices come first, unchanged; every tetrahedron is positively oriented; their volumes
    sum to the enclosed volume (divergence theorem) to round-off; the mesh's boundary is the input's
    triangles; a body made from it has the mass density x volume."""
    V, F = sphere_surface()
    points, tets = tetrahedralize(V, F)
    assert np.array_equal(points[:len(V)], V)
    assert len(points) > len(V) and tets.min() >= 0 and tets.max() < len(points)
    a = points[tets]
    vol = np.einsum("ij,ij->i", a[:, 1] - a[:, 0], np.cross(a[:, 2] - a[:, 0], a[:, 3] - a[:, 0])) / 6
    assert (vol > 0).all()
    enclosed = enclosed_volume(V, F)
    assert abs(vol.sum() - enclosed) <= 1e3 * EPS * enclosed
    assert boundary_faces(tets) == {tuple(sorted(int(i) for i in f)) for f in F}
    system = MultibodySystem()
    SimbodyMatterSubsystem(system)
    body = DeformableBody.from_tetrahedra(system, points, tets, density=1000.0, young=1e5, poisson=0.3)
    assert body.get_masses().sum() == pytest.approx(1000.0 * enclosed, rel=1e-12)


def test_a_smaller_edge_makes_more_and_smaller_tetrahedra():
    V, F = sphere_surface()

    def median_edge(points, tets):
        e = points[tets[:, [0, 0, 0, 1, 1, 2]]] - points[tets[:, [1, 2, 3, 2, 3, 3]]]
        return float(np.median(np.linalg.norm(e, axis=2)))

    coarse = tetrahedralize(V, F)
    fine = tetrahedralize(V, F, max_edge=0.01)
    assert len(fine[1]) > 2 * len(coarse[1])
    assert median_edge(*fine) < 0.8 * median_edge(*coarse)


def test_open_misoriented_and_malformed_surfaces_are_refused():
    V, F = sphere_surface()
    with pytest.raises(ValueError, match="not closed"):
        tetrahedralize(V, F[1:])
    flipped = F.copy()
    flipped[0] = flipped[0][[0, 2, 1]]
    with pytest.raises(ValueError, match="consistently oriented"):
        tetrahedralize(V, flipped)
    with pytest.raises(ValueError, match="outside"):
        tetrahedralize(V, np.where(F == 0, len(V), F))
    with pytest.raises(ValueError, match="finite"):
        tetrahedralize(np.where(V == V[0, 0], np.nan, V), F)
    with pytest.raises(ValueError, match="max_edge"):
        tetrahedralize(V, F, max_edge=-1.0)


def test_the_process_keeps_its_signal_handling():
    """gmsh's initialization resets SIGPIPE to kill the process (and Ctrl-C, unless told not to):
    after tetrahedralize, a write to a closed pipe still raises BrokenPipeError and Ctrl-C is still
    Python's KeyboardInterrupt (run in a subprocess, which the old behaviour killed with SIGPIPE)."""
    import subprocess
    import sys
    code = (
        "import os, signal, numpy as np\n"
        "from scipy.spatial import ConvexHull\n"
        "from simtk.deformable import tetrahedralize\n"
        "V = np.random.default_rng(1).standard_normal((40, 3)); V /= np.linalg.norm(V, axis=1)[:, None]\n"
        "F = ConvexHull(V).simplices.copy()\n"
        "a, b, c = V[F[:, 0]], V[F[:, 1]], V[F[:, 2]]\n"
        "inward = np.einsum('ij,ij->i', np.cross(b - a, c - a), a + b + c) < 0\n"
        "F[inward] = F[inward][:, [0, 2, 1]]\n"
        "tetrahedralize(V, F)\n"
        "assert signal.getsignal(signal.SIGINT) is signal.default_int_handler\n"
        "r, w = os.pipe(); os.close(r)\n"
        "try:\n    os.write(w, b'x')\nexcept BrokenPipeError:\n    print('BrokenPipeError')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "BrokenPipeError", (done.returncode, done.stderr[-500:])
