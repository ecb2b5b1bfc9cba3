"""Tests of the user-facing spatial types in simtk.spatial.

Expected values come from independent computations written here: Rodrigues' formula, Hamilton
quaternion products, 4x4 homogeneous matrices, inertias summed over point masses, numerical
quadrature over solid shapes, and scipy's Rotation as an independent library.
"""
from __future__ import annotations

import copy
import math
import pickle

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from simtk.spatial import Body, Inertia, MassProperties, Rotation, Transform, skew
from tolerances import EPS  # round-off margins below are counts of EPS

# ---------------------------------------------------------------------------------------------
# strategies and independent reference formulas
# ---------------------------------------------------------------------------------------------
unit_floats = st.floats(-1.0, 1.0, allow_nan=False, allow_infinity=False)
coords = st.floats(-5.0, 5.0, allow_nan=False, allow_infinity=False)
angles = st.floats(-3 * math.pi, 3 * math.pi, allow_nan=False, allow_infinity=False)
vec3s = st.tuples(coords, coords, coords).map(np.array)


@st.composite
def quaternions(draw):
    q = np.array(draw(st.tuples(unit_floats, unit_floats, unit_floats, unit_floats)))
    assume(np.linalg.norm(q) > 0.1)
    return q


rotations = quaternions().map(Rotation.from_quaternion)
transforms = st.builds(Transform, rotations, vec3s)


@st.composite
def unit_axes(draw):
    v = np.array(draw(st.tuples(unit_floats, unit_floats, unit_floats)))
    assume(np.linalg.norm(v) > 0.1)
    return v


@st.composite
def point_clouds(draw, n_min=1, n_max=6):
    n = draw(st.integers(n_min, n_max))
    masses = np.array(draw(st.lists(st.floats(0.1, 5.0), min_size=n, max_size=n)))
    pts = np.array(draw(st.lists(st.tuples(coords, coords, coords), min_size=n, max_size=n)))
    return masses, pts


def rodrigues(angle, axis):
    """R = cos t 1 + sin t [n]x + (1 - cos t) n n^T, with [n]x built column by column from cross."""
    n = np.asarray(axis, float) / np.linalg.norm(axis)
    cross_mat = np.column_stack([np.cross(n, e) for e in np.eye(3)])
    return math.cos(angle) * np.eye(3) + math.sin(angle) * cross_mat + (1 - math.cos(angle)) * np.outer(n, n)


def hamilton(a, b):
    """Quaternion product (scalar first)."""
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array([
        w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
        w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
        w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
        w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
    ])


def cloud_inertia(masses, pts, about=np.zeros(3)):
    """Inertia of point masses about a point, from the definition element by element."""
    I = np.zeros((3, 3))
    for m, r in zip(masses, pts - about):
        x, y, z = r
        I += m * np.array([[y * y + z * z, -x * y, -x * z],
                           [-x * y, x * x + z * z, -y * z],
                           [-x * z, -y * z, x * x + y * y]])
    return I


def homogeneous(X):
    m = np.eye(4)
    m[:3, :3] = X.R.matrix
    m[:3, 3] = X.p
    return m


def close(a, b, tol=1e-10):
    return np.allclose(a, b, rtol=0, atol=tol)


# ---------------------------------------------------------------------------------------------
# skew
# ---------------------------------------------------------------------------------------------
@given(vec3s, vec3s)
def test_skew_is_cross_product(a, b):
    """skew(a) @ b == a x b."""
    assert close(skew(a) @ b, np.cross(a, b))


# ---------------------------------------------------------------------------------------------
# Rotation
# ---------------------------------------------------------------------------------------------
@given(rotations)
def test_rotation_is_orthonormal_proper(R):
    """R^T R = 1 and det R = +1 for every rotation."""
    m = R.matrix
    assert close(m.T @ m, np.eye(3), (64 * EPS))
    assert abs(np.linalg.det(m) - 1) < (64 * EPS)


@given(rotations, rotations, rotations)
def test_composition_is_associative(A, B, C):
    """(A B) C == A (B C), and composing is the matrix product."""
    assert close(((A * B) * C).matrix, (A * (B * C)).matrix, (64 * EPS))
    assert close((A * B).matrix, A.matrix @ B.matrix, (64 * EPS))


@given(rotations, vec3s)
def test_inverse(R, v):
    """~R is the transpose; R * ~R is the identity; ~R undoes R on vectors."""
    assert np.array_equal((~R).matrix, R.matrix.T)
    assert (R * ~R).is_same_rotation(Rotation(), (64 * EPS))
    assert close((~R) * (R * v), v, (2**13 * EPS))


@given(rotations, st.lists(st.tuples(coords, coords, coords), min_size=1, max_size=5))
def test_rotating_many_vectors_matches_one_by_one(R, vs):
    """R * (n,3) rotates each row as R * (3,) does."""
    vs = np.array(vs)
    out = R * vs
    assert out.shape == vs.shape
    for v, w in zip(vs, out):
        assert close(w, R.matrix @ v, (512 * EPS))


@given(quaternions())
def test_quaternion_round_trip(q):
    """to_quaternion(from_quaternion(q)) is q/|q| up to sign, with w >= 0."""
    qn = q / np.linalg.norm(q)
    back = Rotation.from_quaternion(q).to_quaternion()
    assert back[0] >= 0
    assert close(back, qn, (2**13 * EPS)) or close(back, -qn, (2**13 * EPS))


@given(quaternions(), vec3s)
def test_quaternion_rotates_like_hamilton_product(q, v):
    """from_quaternion(q) * v equals the vector part of q (0, v) q^* for unit q."""
    qn = q / np.linalg.norm(q)
    conj = qn * np.array([1, -1, -1, -1])
    expected = hamilton(hamilton(qn, np.r_[0.0, v]), conj)[1:]
    assert close(Rotation.from_quaternion(q) * v, expected, (2**13 * EPS))


@given(angles, unit_axes())
def test_angle_axis_matches_rodrigues(angle, axis):
    """Rotation(angle, axis) equals Rodrigues' formula; the axis need not be normalized."""
    assert close(Rotation(angle, axis).matrix, rodrigues(angle, axis), (64 * EPS))
    assert close(Rotation(angle, 3.7 * axis).matrix, rodrigues(angle, axis), (64 * EPS))
    assert close(Rotation.from_angle_axis(angle, axis).matrix, rodrigues(angle, axis), (64 * EPS))


@pytest.mark.parametrize("names,e", [(("x", "X", "XAxis", 0), [1, 0, 0]),
                                     (("y", "Y", "YAxis", 1), [0, 1, 0]),
                                     (("z", "Z", "ZAxis", 2), [0, 0, 1])])
@pytest.mark.parametrize("angle", [0.0, 0.3, -2.0, math.pi])
def test_coordinate_axes_match_rodrigues(names, e, angle):
    """Named axes are the unit coordinate vectors."""
    for name in names:
        assert close(Rotation(angle, name).matrix, rodrigues(angle, e), (64 * EPS))


@given(st.floats(1e-6, math.pi - 1e-6), unit_axes())
def test_to_angle_axis_round_trip(angle, axis):
    """to_angle_axis recovers an angle in (0, pi) and the unit axis."""
    a, n = Rotation(angle, axis).to_angle_axis()
    assert abs(a - angle) < 1e-9
    assert close(n, axis / np.linalg.norm(axis), 1e-6 / min(angle, math.pi - angle) + 1e-9)


@given(st.tuples(angles, angles, angles).map(np.array))
def test_body_fixed_xyz_definition(a):
    """from_body_fixed_xyz(a) == Rx(a0) Ry(a1) Rz(a2) with each factor from Rodrigues."""
    expected = rodrigues(a[0], [1, 0, 0]) @ rodrigues(a[1], [0, 1, 0]) @ rodrigues(a[2], [0, 0, 1])
    assert close(Rotation.from_body_fixed_xyz(a).matrix, expected, (64 * EPS))


@given(st.floats(-math.pi + 1e-3, math.pi - 1e-3),
       st.floats(-math.pi / 2 + 1e-2, math.pi / 2 - 1e-2),
       st.floats(-math.pi + 1e-3, math.pi - 1e-3))
def test_body_fixed_xyz_round_trip_away_from_gimbal_lock(a0, a1, a2):
    """to_body_fixed_xyz inverts from_body_fixed_xyz on its principal range."""
    a = np.array([a0, a1, a2])
    assert close(Rotation.from_body_fixed_xyz(a).to_body_fixed_xyz(), a, 1e-9)


@given(rotations)
def test_body_fixed_xyz_reproduces_any_rotation(R):
    """from_body_fixed_xyz(to_body_fixed_xyz(R)) == R for every R; the middle angle is in [-pi/2, pi/2]."""
    a = R.to_body_fixed_xyz()
    assert abs(a[1]) <= math.pi / 2 + (64 * EPS)
    assert Rotation.from_body_fixed_xyz(a).is_same_rotation(R, (2**13 * EPS))


@pytest.mark.parametrize("a1", [math.pi / 2, -math.pi / 2])
@pytest.mark.parametrize("a0,a2", [(0.3, 0.4), (-1.0, 2.5), (0.0, 0.0)])
def test_body_fixed_xyz_at_gimbal_lock(a0, a1, a2):
    """At gimbal lock the angles are not unique but they still reproduce the rotation."""
    R = Rotation.from_body_fixed_xyz([a0, a1, a2])
    b = R.to_body_fixed_xyz()
    assert Rotation.from_body_fixed_xyz(b).is_same_rotation(R, (2**13 * EPS))
    assert abs(abs(b[1]) - math.pi / 2) < 1e-7


@given(quaternions(), st.tuples(angles, angles, angles).map(np.array))
def test_against_scipy(q, a):
    """Quaternion and intrinsic XYZ conventions agree with scipy's Rotation (scalar-last quaternions)."""
    sr = pytest.importorskip("scipy.spatial.transform").Rotation
    qn = q / np.linalg.norm(q)
    ref = sr.from_quat([qn[1], qn[2], qn[3], qn[0]]).as_matrix()
    assert close(Rotation.from_quaternion(q).matrix, ref, (64 * EPS))
    assert close(Rotation.from_body_fixed_xyz(a).matrix, sr.from_euler("XYZ", a).as_matrix(), (64 * EPS))


@given(rotations, st.floats(1e-6, 1e-2))
def test_is_same_rotation_uses_the_angle(R, eps):
    """Two rotations differing by an angle eps are the same within tol >= eps, not within tol < eps."""
    S = R * Rotation(eps, [1, 2, 3])
    assert R.is_same_rotation(S, 1.001 * eps)
    assert not R.is_same_rotation(S, 0.999 * eps)


def test_from_matrix_validates_and_reorthonormalizes():
    """Near-rotations are projected onto SO(3); non-rotations are refused with the reason."""
    m = rodrigues(0.7, [1, 1, 0])
    assert np.array_equal(Rotation.from_matrix(m).matrix, m)  # already orthonormal: kept exactly
    drifted = m + 1e-8 * np.arange(9).reshape(3, 3)
    R = Rotation.from_matrix(drifted)
    assert close(R.matrix.T @ R.matrix, np.eye(3), (64 * EPS))
    assert close(R.matrix, m, 1e-7)
    with pytest.raises(ValueError, match="not orthonormal"):
        Rotation.from_matrix(m * 1.01)
    with pytest.raises(ValueError, match="reflection"):
        Rotation.from_matrix(np.diag([1.0, 1.0, -1.0]))
    with pytest.raises(ValueError, match="finite"):
        Rotation.from_matrix([[np.nan, 0, 0], [0, 1, 0], [0, 0, 1]])
    with pytest.raises(ValueError, match="shape"):
        Rotation.from_matrix(np.eye(4))


def test_rotation_bad_input():
    with pytest.raises(ValueError, match="nonzero"):
        Rotation(1.0, [0, 0, 0])
    with pytest.raises(ValueError, match="unknown axis"):
        Rotation(1.0, "w")
    with pytest.raises(ValueError, match="finite"):
        Rotation(np.nan, "x")
    with pytest.raises(TypeError, match="from_matrix"):
        Rotation(np.eye(3))
    with pytest.raises(TypeError, match="axis"):
        Rotation(1.0)
    with pytest.raises(ValueError, match="nonzero"):
        Rotation.from_quaternion([0, 0, 0, 0])
    with pytest.raises(ValueError, match=r"shape \(4,\)"):
        Rotation.from_quaternion([1, 0, 0])
    with pytest.raises(ValueError, match="shape"):
        Rotation() * np.ones(4)


def test_arrays_are_read_only_and_survive_pickling():
    """Getters hand out read-only arrays; pickling and deep copies keep values and the flag."""
    R = Rotation(0.4, "y")
    X = Transform(R, [1, 2, 3])
    I = Inertia([1, 2, 2.5], [0.1, 0.0, 0.0])
    mp = MassProperties(2.0, [0.1, 0.2, 0.3], I)
    for a in (R.matrix, X.p, I.matrix, mp.com):
        assert not a.flags.writeable
        with pytest.raises(ValueError):
            a[0] = 1.0
    for obj, get in ((R, lambda o: o.matrix), (X, lambda o: o.p), (I, lambda o: o.matrix),
                     (mp, lambda o: o.com)):
        back = pickle.loads(pickle.dumps(obj))
        assert np.array_equal(get(back), get(obj))
        assert not get(back).flags.writeable
        assert copy.deepcopy(obj) is obj


def test_repr_round_trips():
    """repr evaluates back to an equal object."""
    ns = {"Rotation": Rotation, "Transform": Transform, "Inertia": Inertia,
          "MassProperties": MassProperties}
    R = Rotation(0.4, [1, 2, 3])
    assert np.array_equal(eval(repr(R), ns).matrix, R.matrix)
    X = Transform(R, [1, 2, 3])
    assert np.array_equal(eval(repr(X), ns).matrix44(), X.matrix44())
    mp = MassProperties(2.0, [0.1, 0.2, 0.3], Inertia([1, 2, 2.5], [0.1, 0.0, 0.0]))
    back = eval(repr(mp), ns)
    assert back.mass == mp.mass and np.array_equal(back.inertia.matrix, mp.inertia.matrix)


def test_numpy_arrays_do_not_broadcast_over_spatial_objects():
    """array * R is refused instead of silently building an object array."""
    with pytest.raises(TypeError):
        np.ones(3) * Rotation()
    with pytest.raises(TypeError):
        np.ones(3) @ Transform()


# ---------------------------------------------------------------------------------------------
# Transform
# ---------------------------------------------------------------------------------------------
@given(transforms, transforms, vec3s)
def test_transform_composition_is_4x4_product(X1, X2, s):
    """X1 * X2 equals the product of homogeneous matrices; X * s equals M [s; 1]."""
    assert close((X1 * X2).matrix44(), homogeneous(X1) @ homogeneous(X2), (2**13 * EPS))
    assert close(X1 * s, (homogeneous(X1) @ np.r_[s, 1.0])[:3], (2**13 * EPS))
    assert close(X1.matrix34(), homogeneous(X1)[:3], 0)


@given(transforms, st.lists(st.tuples(coords, coords, coords), min_size=1, max_size=5))
def test_transform_maps_many_stations(X, ss):
    """X * (n,3) maps each row like X * (3,)."""
    ss = np.array(ss)
    out = X * ss
    for s, t in zip(ss, out):
        assert close(t, X * s, (512 * EPS))


@given(transforms, vec3s)
def test_transform_inverse(X, s):
    """~X is the inverse 4x4 matrix, X * ~X the identity, and ~X undoes X on stations."""
    assert close((~X).matrix44(), np.linalg.inv(homogeneous(X)), (2**13 * EPS))
    assert (X * ~X).is_same_transform(Transform(), (512 * EPS), (512 * EPS))
    assert close((~X) * (X * s), s, (2**13 * EPS))
    assert close(X.shift_base_station_to_frame(X.shift_frame_station_to_base(s)), s, (2**13 * EPS))
    assert close(X.xform_base_vec_to_frame(X.xform_frame_vec_to_base(s)), s, (2**13 * EPS))
    assert close(X.xform_frame_vec_to_base(s), X.R.matrix @ s, (2**13 * EPS))


@given(transforms)
def test_matrix44_round_trip(X):
    """from_matrix44(matrix44(X)) == X exactly."""
    Y = Transform.from_matrix44(X.matrix44())
    assert np.array_equal(Y.matrix44(), X.matrix44())


def test_transform_constructors():
    R = Rotation(0.3, "z")
    p = np.array([1.0, 2.0, 3.0])
    assert np.array_equal(Transform().matrix44(), np.eye(4))
    assert np.array_equal(Transform(p).p, p) and np.array_equal(Transform(p).R.matrix, np.eye(3))
    assert Transform(R).R is R and not Transform(R).p.any()
    assert np.array_equal(Transform(R.matrix, p).R.matrix, R.matrix)
    assert np.array_equal(Transform(R.matrix).R.matrix, R.matrix)
    assert np.array_equal(Transform(R, p).matrix44(), homogeneous(Transform(R, p)))
    with pytest.raises(ValueError, match="finite"):
        Transform(R, [np.nan, 0, 0])
    with pytest.raises(ValueError, match="shape"):
        Transform(R, [1, 2])
    with pytest.raises(ValueError, match="bottom row"):
        Transform.from_matrix44(np.ones((4, 4)))
    with pytest.raises(ValueError, match="not orthonormal"):
        Transform(2 * np.eye(3), p)


# ---------------------------------------------------------------------------------------------
# Inertia
# ---------------------------------------------------------------------------------------------
def test_inertia_constructors_follow_simbody_layout():
    """Products (xy, xz, yz) are the off-diagonal entries; the scalar form is isotropic."""
    expected = np.array([[1.0, 0.1, 0.2], [0.1, 2.0, 0.3], [0.2, 0.3, 2.5]])
    assert np.array_equal(Inertia([1, 2, 2.5], [0.1, 0.2, 0.3]).matrix, expected)
    assert np.array_equal(Inertia(1, 2, 2.5, 0.1, 0.2, 0.3).matrix, expected)
    assert np.array_equal(Inertia.from_matrix(expected).matrix, expected)
    assert np.array_equal(Inertia(expected).matrix, expected)
    assert np.array_equal(Inertia(1, 2, 2.5).matrix, np.diag([1, 2, 2.5]))
    assert np.array_equal(Inertia(3.0).matrix, 3 * np.eye(3))
    I = Inertia([1, 2, 2.5], [0.1, 0.2, 0.3])
    assert np.array_equal(I.moments, [1, 2, 2.5]) and np.array_equal(I.products, [0.1, 0.2, 0.3])


@pytest.mark.parametrize("make,pattern", [
    (lambda: Inertia.from_matrix([[1, 0.5, 0], [0, 1, 0], [0, 0, 1]]), r"not symmetric: I\[0,1\] = 0.5"),
    (lambda: Inertia([-1, 1, 1]), r"Ixx = -1 is negative"),
    (lambda: Inertia([1, 1, 3]), r"triangle inequality: 3 > 1 \+ 1"),
    (lambda: Inertia([1, 1, 1], [2, 0, 0]), r"not positive semi-definite: principal moments \[-1,"),
    # Diagonal fine, but the principal moments 0.5, 2, 3.5 break the triangle inequality.
    (lambda: Inertia([2, 2, 2], [1.5, 0, 0]), r"triangle inequality: 3.5 > 0.5 \+ 2"),
    (lambda: Inertia([np.nan, 1, 1]), r"finite"),
    (lambda: Inertia([1, 1, 1], [0, np.inf, 0]), r"finite"),
    (lambda: Inertia.from_matrix(np.eye(2)), r"shape"),
])
def test_inertia_validation_messages(make, pattern):
    """Each invalid inertia raises ValueError saying which test failed, with the numbers."""
    with pytest.raises(ValueError, match=pattern):
        make()


def test_inertia_tolerates_roundoff_only():
    """A thin disk (Izz = Ixx + Iyy exactly) passes; a clear violation does not."""
    Inertia([0.1, 0.2, 0.3 + 1e-15])
    with pytest.raises(ValueError, match="triangle"):
        Inertia([0.1, 0.2, 0.3 + 1e-6])
    # A point mass at the origin whose mass center is off only by roundoff: central inertia ~ -1e-32.
    mp = MassProperties(2.0, [1e-16, 0.0, 0.0], Inertia(0.0))
    assert np.abs(mp.central_inertia().matrix).max() < 1e-30
    with pytest.raises(ValueError, match="not physical"):
        MassProperties(2.0, [1e-6, 0.0, 0.0], Inertia(0.0))


@given(point_clouds(), point_clouds())
def test_inertia_arithmetic_is_additive_over_mass(c1, c2):
    """The inertia of a union of point sets is the sum; scaling the masses scales the inertia."""
    (m1, p1), (m2, p2) = c1, c2
    I1, I2 = Inertia.from_matrix(cloud_inertia(m1, p1)), Inertia.from_matrix(cloud_inertia(m2, p2))
    both = cloud_inertia(np.r_[m1, m2], np.vstack([p1, p2]))
    assert close((I1 + I2).matrix, both, 1e-9)
    assert close(((I1 + I2) - I2).matrix, I1.matrix, 1e-9)
    assert close((2.5 * I1).matrix, cloud_inertia(2.5 * m1, p1), 1e-9)
    assert close((I1 * 2.5).matrix, (I1 / 0.4).matrix, 1e-9)


def test_inertia_arithmetic_refuses_invalid_results():
    with pytest.raises(ValueError, match="negative"):
        Inertia(1.0) - Inertia(2.0)
    with pytest.raises(ValueError, match=">= 0"):
        -1.0 * Inertia(1.0)


@given(point_clouds(), vec3s, vec3s)
def test_parallel_axis_against_point_masses(cloud, a, b):
    """shift_to_mass_center / shift_from_mass_center agree with inertias summed about each point."""
    masses, pts = cloud
    M = masses.sum()
    com = (masses[:, None] * pts).sum(0) / M
    I_A = Inertia.from_matrix(cloud_inertia(masses, pts, a))
    I_C = I_A.shift_to_mass_center(com - a, M)
    assert close(I_C.matrix, cloud_inertia(masses, pts, com), 1e-8)
    I_B = I_C.shift_from_mass_center(b - com, M)
    assert close(I_B.matrix, cloud_inertia(masses, pts, b), 1e-8)


@given(point_clouds(), rotations)
def test_reexpress_against_point_masses(cloud, R_FB):
    """I_F.reexpress(R_FB) is the inertia of the same points with coordinates taken in B."""
    masses, pts_F = cloud
    pts_B = pts_F @ R_FB.matrix  # rows: R_BF p_F
    I_F = Inertia.from_matrix(cloud_inertia(masses, pts_F))
    assert close(I_F.reexpress(R_FB).matrix, cloud_inertia(masses, pts_B), 1e-9)
    assert close(I_F.reexpress(R_FB).reexpress(~R_FB).matrix, I_F.matrix, 1e-9)


def _grid_inertia(inside, half_extent, n=60):
    """Unit-mass inertia of a solid by the midpoint rule on an n^3 grid over a bounding box."""
    axes = [(np.arange(n) + 0.5) / n * 2 * h - h for h in half_extent]
    X, Y, Z = np.meshgrid(*axes, indexing="ij")
    keep = inside(X, Y, Z)
    x, y, z = X[keep], Y[keep], Z[keep]
    w = 1.0 / keep.sum()
    return w * np.array([[np.sum(y * y + z * z), -np.sum(x * y), -np.sum(x * z)],
                         [-np.sum(x * y), np.sum(x * x + z * z), -np.sum(y * z)],
                         [-np.sum(x * z), -np.sum(y * z), np.sum(x * x + y * y)]])


@pytest.mark.parametrize("name", ["sphere", "cyl_x", "cyl_y", "cyl_z", "brick", "ellipsoid"])
def test_unit_inertia_factories_against_quadrature(name):
    """Unit-mass shape inertias agree with numerical integration over the solid (grid, ~1%)."""
    r, h = 0.7, 1.3
    a, b, c = 0.5, 0.9, 1.4
    cases = {
        "sphere": (Inertia.sphere(r), lambda x, y, z: x * x + y * y + z * z <= r * r, (r, r, r)),
        "cyl_x": (Inertia.cylinder_along_x(r, h), lambda x, y, z: y * y + z * z <= r * r, (h, r, r)),
        "cyl_y": (Inertia.cylinder_along_y(r, h), lambda x, y, z: x * x + z * z <= r * r, (r, h, r)),
        "cyl_z": (Inertia.cylinder_along_z(r, h), lambda x, y, z: x * x + y * y <= r * r, (r, r, h)),
        "brick": (Inertia.brick(a, b, c), lambda x, y, z: np.ones_like(x, bool), (a, b, c)),
        "ellipsoid": (Inertia.ellipsoid(a, b, c),
                      lambda x, y, z: (x / a) ** 2 + (y / b) ** 2 + (z / c) ** 2 <= 1, (a, b, c)),
    }
    I, inside, ext = cases[name]
    ref = _grid_inertia(inside, ext)
    assert np.allclose(I.matrix, ref, rtol=0.02, atol=2e-3 * np.abs(ref).max())


def test_unit_inertia_factories_refuse_negative_sizes():
    with pytest.raises(ValueError, match=">= 0"):
        Inertia.sphere(-1.0)
    with pytest.raises(ValueError, match=">= 0"):
        Inertia.brick(1.0, -1.0, 1.0)


# ---------------------------------------------------------------------------------------------
# MassProperties
# ---------------------------------------------------------------------------------------------
def _cloud_mass_properties(cloud):
    masses, pts = cloud
    M = masses.sum()
    com = (masses[:, None] * pts).sum(0) / M
    return M, com, cloud_inertia(masses, pts), cloud_inertia(masses, pts, com)


@given(point_clouds())
def test_mass_properties_central_and_origin_round_trip(cloud):
    """Origin inertia -> central and central -> origin both match the point-mass sums."""
    M, com, I_O, I_C = _cloud_mass_properties(cloud)
    mp = MassProperties(M, com, I_O)
    assert close(mp.central_inertia().matrix, I_C, 1e-8)
    mp2 = MassProperties.from_central_inertia(M, com, I_C)
    assert close(mp2.inertia.matrix, I_O, 1e-8)
    assert close(MassProperties(M, com, mp2.inertia).central_inertia().matrix, I_C, 1e-8)
    assert mp.mass == M and np.array_equal(mp.com, com)


@given(point_clouds(), vec3s, vec3s)
def test_spatial_inertia_gives_point_mass_momentum(cloud, w, v_O):
    """M (w, v_O) = (sum r_i x m_i v_i, sum m_i v_i) with v_i = v_O + w x r_i."""
    masses, pts = cloud
    M, com, I_O, _ = _cloud_mass_properties(cloud)
    S = MassProperties(M, com, I_O).spatial_inertia_matrix()
    v = v_O + np.cross(w, pts)
    L = (masses[:, None] * v).sum(0)
    H = np.cross(pts, masses[:, None] * v).sum(0)
    assert close(S @ np.r_[w, v_O], np.r_[H, L], 1e-8 * (1 + np.abs(np.r_[H, L]).max()))
    assert np.array_equal(S, S.T)
    # Kinetic energy 1/2 V^T M V equals the particle sum.
    T = 0.5 * np.sum(masses * np.sum(v * v, axis=1))
    assert abs(0.5 * np.r_[w, v_O] @ S @ np.r_[w, v_O] - T) <= 1e-8 * (1 + T)


@given(point_clouds(), transforms)
def test_transformed_mass_props_against_point_masses(cloud, X_BC):
    """calc_transformed_mass_props(X_BC) equals the mass properties of the points given in C."""
    masses, pts_B = cloud
    pts_C = (~X_BC) * pts_B
    M, com_B, I_O, _ = _cloud_mass_properties(cloud)
    mp_C = MassProperties(M, com_B, I_O).calc_transformed_mass_props(X_BC)
    _, com_C, I_OC, I_CC = _cloud_mass_properties((masses, pts_C))
    assert close(mp_C.com, com_C, 1e-9)
    assert close(mp_C.inertia.matrix, I_OC, 1e-7)
    assert close(mp_C.central_inertia().matrix, I_CC, 1e-7)
    shifted = MassProperties(M, com_B, I_O).calc_shifted_mass_props(X_BC.p)
    assert close(shifted.inertia.matrix, cloud_inertia(masses, pts_B, X_BC.p), 1e-7)
    assert close(shifted.com, com_B - X_BC.p, (2**13 * EPS))
    re = MassProperties(M, com_B, I_O).reexpress(X_BC.R)
    assert close(re.inertia.matrix, cloud_inertia(masses, pts_B @ X_BC.R.matrix), 1e-7)


def test_mass_properties_accepts_simbody_style_arguments():
    mp = MassProperties(1, 0, Inertia(1))
    assert mp.mass == 1.0 and not mp.com.any() and np.array_equal(mp.inertia.matrix, np.eye(3))
    assert np.array_equal(MassProperties(2, [0, 0, 0], [1, 2, 2.5]).inertia.matrix, np.diag([1, 2, 2.5]))
    assert np.array_equal(MassProperties(2, [0, 0, 0], np.eye(3)).inertia.matrix, np.eye(3))
    assert MassProperties(0, [1, 2, 3], 0).is_exactly_massless()


@pytest.mark.parametrize("make,pattern", [
    (lambda: MassProperties(-1, 0, Inertia(1)), r"mass must be >= 0, got -1"),
    (lambda: MassProperties(np.nan, 0, Inertia(1)), r"mass is NaN"),
    (lambda: MassProperties(np.inf, 0, Inertia(1)), r"mass must be finite"),
    (lambda: MassProperties(1, [0, np.nan, 0], Inertia(1)), r"com must be finite"),
    (lambda: MassProperties(0, 0, Inertia(1)), r"massless body .* zero inertia"),
    (lambda: MassProperties.from_central_inertia(0, 0, Inertia(1)), r"massless body"),
    (lambda: MassProperties(1, 0, [1, 1, 3]), r"triangle"),
    # A central inertia passed as if it were about the origin, with the com far away.
    (lambda: MassProperties(1, [1, 0, 0], Inertia(0.1)),
     r"central inertia .* not physical .*from_central_inertia"),
])
def test_mass_properties_validation(make, pattern):
    """Bad mass properties raise ValueError naming the problem."""
    with pytest.raises(ValueError, match=pattern):
        make()


def test_point_mass_body_has_zero_central_inertia():
    """A point mass off the origin: the origin inertia is valid, the central one is zero."""
    p = np.array([0.3, -1.2, 2.0])
    I_O = Inertia.point_mass_at(p, 2.0)
    mp = MassProperties(2.0, p, I_O)
    assert close(mp.central_inertia().matrix, np.zeros((3, 3)), (64 * EPS))
    assert close(I_O.matrix, cloud_inertia([2.0], p[None]), (64 * EPS))


# ---------------------------------------------------------------------------------------------
# Body
# ---------------------------------------------------------------------------------------------
def test_body_kinds():
    rigid = Body.Rigid()
    mp = rigid.get_default_rigid_body_mass_properties()
    assert mp.mass == 1 and not mp.com.any() and np.array_equal(mp.inertia.matrix, np.eye(3))
    new = MassProperties(3.0, [0, 0.1, 0], Inertia.brick(0.1, 0.2, 0.3) * 3.0)
    assert rigid.set_default_rigid_body_mass_properties(new) is rigid
    assert rigid.get_default_rigid_body_mass_properties() is new
    assert isinstance(rigid, Body) and isinstance(Body.Massless(), Body)
    massless = Body.Massless()
    assert massless.get_default_rigid_body_mass_properties().is_exactly_massless()
    assert not massless.get_default_rigid_body_mass_properties().inertia.matrix.any()
    with pytest.raises(ValueError, match="Massless"):
        massless.set_default_rigid_body_mass_properties(new)
    with pytest.raises(TypeError, match="MassProperties"):
        Body.Rigid((1.0, 0, 1))
    with pytest.raises(TypeError, match="base class"):
        Body(new)
    assert pickle.loads(pickle.dumps(Body.Rigid(new))).get_default_rigid_body_mass_properties().mass == 3.0
