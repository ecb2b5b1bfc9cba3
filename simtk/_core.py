"""The one door to the compiled core ``simtk_core``.

Every call into a kernel goes through a wrapper here that checks shapes, dtypes
and contiguity first, so that the kernels themselves never validate anything.

Multibody kernels
-----------------
:func:`make_tree_kernels` validates a frozen tree and returns a ``simtk_core.TreeKernels`` workspace (one per
State). The checked functions below (:func:`realize_position`, :func:`forward_dynamics`, ...) validate their
arguments and call the workspace's method of the same name. A caller that allocated its arrays itself with the
right shapes (the matter subsystem's own caches) may call the workspace methods directly to save the checks:
the methods then cost well under a microsecond of call overhead.

Array interface of a workspace ``ws`` (all float64, C-contiguous; nb bodies including Ground = body 0, nu
mobilities, nq coordinates; all spatial quantities in Ground unless the name says otherwise; spatial vectors
are (2,3) = (angular, linear)):

Inputs kept by the workspace (may be overwritten in place between stages, e.g. mass properties at Instance stage):
  parent (nb,) int64, jtype (nb,) int64, qoff (nb+1,), uoff (nb+1,) int64, jparam (nb,3) (Screw pitch in [:,0]),
  R_PF (nb,3,3), p_PF (nb,3), R_BM (nb,3,3), p_BM (nb,3), mass (nb,), p_BC (nb,3) mass center in B,
  I_B (nb,3,3) inertia about the body ORIGIN in B.
realize_position(q) (q only):
  q (nq,) copy of the coordinates used; R_FM (nb,3,3), p_FM (nb,3) = X_FM;
  H_FM (nu,2,3) mobility columns in F (V_FM = H_FM u, velocity of M's origin);
  qerr (nb,) = |quaternion| - 1 for quaternion bodies, 0 otherwise;
  R_GF (nb,3,3); p_GM (nb,3) origin of M in G; R_GB (nb,3,3), p_GB (nb,3) = X_GB;
  p_GC (nb,3) mass centers in G; S (nu,2,3) the columns of the system Jacobian
  at the Ground origin (the change of each body's V_O per unit u); I_O (nb,6,6) spatial inertias about the
  Ground origin (a Weld body's zero: its mass is folded into its root's, the
  nearest non-Weld ancestor, so the sweeps skip it); P, Pa (nb,6,6) articulated inertias before/after projecting
  out the joint (a body without non-Weld children, cfirst 0, has P = I_O: read there, P not written),
  U (nu,2,3) = P S, Dinv (nb,6,6) (top-left nu_i x nu_i block, row stride nu_i) = (S^T P S)^-1.
realize_velocity(u) (q and u):
  u (nu,); V_FM (nb,2,3) in F; HDotu_FM (nb,2,3) = HDot_FM u in F; qdot (nq,) = N u;
  V_GB (nb,2,3) body velocities (angular, velocity of the origin); V_O (nb,2,3) the same at the Ground origin;
  c (nb,2,3) velocity-dependent acceleration across each joint (at the Ground origin); b (nb,2,3) gyroscopic
  forces (at the Ground origin); A_bias (nb,2,3) = JDot u, the body accelerations when udot = 0 (angular,
  origin acceleration); A_bias_O the same, spatial at the Ground origin.
forward_dynamics(mobility_forces (nu,), body_forces (nb,2,3)):
  udot (nu,), A_GB (nb,2,3) (angular, acceleration of the body origin),
  A_O (nb,2,3) spatial accelerations at the Ground origin, qdotdot (nq,).
Custom mobilizers (jtype == CUSTOM): Python writes their rows of R_FM, p_FM, H_FM before realize_position, of
HDotu_FM and qdot before realize_velocity and of qdotdot after forward_dynamics; the kernels use those rows unchanged.
FunctionBased mobilizers whose functions are all built in are a compiled kind (jtype ``function_joint_code(n)``):
the kernels compute their rows from the records given as ``function_joints`` (``core/function_joint.pxi``).

Force kernels
-------------
The builders ``*_set`` (e.g. :func:`two_point_linear_spring_set`) validate the parameters of all elements of
one built-in force kind and pack them into a ``simtk_core.ForceSet``; :func:`add_forces` adds their forces into
body_forces (nb,2,3) and mobility_forces (nu,) from a workspace's realized q, u, R_GB, p_GB, V_GB, p_GC, mass
and p_BC, and :func:`force_energy` sums their potential energies. ``simtk_core.add_force_sets(sets, ws,
body_forces, mobility_forces, zero_first)`` does several sets in one call (the force subsystem's hot path).
"""
from __future__ import annotations

import os
from typing import Mapping

import numpy as np

# The batched calls open one OpenMP parallel region per call (milliseconds of work): threads that
# spin at its end buy nothing and, on a machine shared with other processes, steal the cores the
# other threads need. libgomp reads this when the core loads; a user's setting is kept.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import simtk_core as _k  # noqa: E402

__all__ = [
    "all_finite", "first_non_finite",
    "JOINT_TYPES", "CUSTOM", "joint_code", "function_joint_code", "FB_LAYOUT", "make_tree_kernels",
    "realize_position", "realize_velocity", "forward_dynamics", "inverse_dynamics",
    "mass_matrix", "multiply_by_m", "multiply_by_m_inv", "jacobian", "jacobian_transpose",
    "frame_jacobian", "frame_jacobian_transpose", "frame_bias", "station_jacobian",
    "station_jacobian_transpose", "station_bias", "multiply_by_n", "multiply_by_n_inv",
]

#: name -> (code, nq, nu, uses_quaternion); Custom has nq = nu = -1 (given per body).
JOINT_TYPES: dict = dict(_k.JOINT_TYPES)
CUSTOM: int = JOINT_TYPES["Custom"][0]
_BY_CODE = {v[0]: (k, v[1], v[2]) for k, v in JOINT_TYPES.items()}
#: n -> the code of a compiled FunctionBased mobilizer of n mobilities (not in JOINT_TYPES: it needs records)
FUNCTION_JOINT_CODES: dict = dict(_k.FUNCTION_JOINT_CODES)
_FUNCTION_N = {code: n for n, code in FUNCTION_JOINT_CODES.items()}
#: n -> the code of a jit mobilizer of n mobilities (``core/jit_mobilizers.pxi``; it needs its records)
JIT_JOINT_CODES: dict = dict(_k.JIT_JOINT_CODES)
_JIT_N = {code: n for n, code in JIT_JOINT_CODES.items()}
#: (nq, nu) -> the code of a jit mobilizer with an N kernel (qdot = N(q) u; it needs its records)
JITN_JOINT_CODES: dict = dict(_k.JITN_JOINT_CODES)
_JITN_SIZES = {code: sizes for sizes, code in JITN_JOINT_CODES.items()}
#: the most coordinates a jit mobilizer with an N kernel may have
JIT_MAX_NQ: int = int(_k.JIT_MAX_NQ)
#: the layout of a FunctionBased record (``core/function_joint.pxi``)
FB_LAYOUT: dict = dict(_k.FB_LAYOUT)


def _as_vector(x) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float64).reshape(-1)


def all_finite(x) -> bool:
    """Return True when every entry of ``x`` (any shape) is finite."""
    return bool(_k.all_finite(_as_vector(x)))


def first_non_finite(x) -> int:
    """Flat index of the first NaN or infinite entry of ``x``, or -1 if none."""
    return int(_k.first_non_finite(_as_vector(x)))


def joint_code(name: str) -> int:
    """Integer joint type for a joint name of :data:`JOINT_TYPES` (e.g. ``"Pin"``)."""
    try:
        return JOINT_TYPES[name][0]
    except KeyError:
        raise ValueError(f"unknown joint type {name!r}; known: {sorted(JOINT_TYPES)}") from None


def function_joint_code(n: int) -> int:
    """The joint code of a compiled ``MobilizedBody.FunctionBased`` with ``n`` (1 to 6) mobilities."""
    try:
        return FUNCTION_JOINT_CODES[n]
    except KeyError:
        raise ValueError(f"a FunctionBased mobilizer has 1 to 6 mobilities, got {n!r}") from None


def _array(name: str, x, shape: tuple, dtype=np.float64) -> np.ndarray:
    a = np.array(x, dtype=dtype, order="C", copy=True)
    if a.shape != shape:
        raise ValueError(f"{name}: expected shape {shape}, got {a.shape}")
    if dtype == np.float64:
        bad = first_non_finite(a)
        if bad >= 0:
            idx = np.unravel_index(bad, shape)
            raise ValueError(f"{name}: entry {tuple(int(i) for i in idx)} is not finite "
                             f"({a[idx]!r})")
    return a


def make_tree_kernels(parent, jtype, *, R_PF, p_PF, R_BM, p_BM, mass, p_BC, I_B,
                      jparam=None, custom_sizes: Mapping[int, tuple] | None = None, function_joints=None,
                      jit_mobilizers=None, armature=None):
    """Validate a frozen tree and build its kernel workspace.

    Parameters
    ----------
    parent : array_like of int, shape (nb,)
        Parent body of each body; ``parent[0]`` (Ground) is ignored, and
        ``0 <= parent[i] < i`` for ``i >= 1``.
    jtype : array_like of int or str, shape (nb,)
        Joint type code (or name from :data:`JOINT_TYPES`) of each body's
        mobilizer; ``jtype[0]`` is ignored (Ground is welded).
    R_PF, p_PF : array_like, shapes (nb, 3, 3) and (nb, 3)
        Frame F on the parent, X_PF.
    R_BM, p_BM : array_like, shapes (nb, 3, 3) and (nb, 3)
        Frame M on the body, X_BM.
    mass : array_like, shape (nb,)
    p_BC : array_like, shape (nb, 3)
        Mass center in the body frame.
    I_B : array_like, shape (nb, 3, 3)
        Inertia about the body origin, in the body frame (Simbody's convention).
    jparam : array_like, shape (nb, 3), optional
        Joint parameters (Screw: pitch in column 0).
    custom_sizes : mapping body -> (nq, nu), optional
        Sizes for Custom mobilizers.
    function_joints : (FunctionTable, mapping body -> (int record, real record)), optional
        The compiled FunctionBased mobilizers (codes ``function_joint_code(n)``): the table of their
        functions and each one's record (``FB_LAYOUT``; packed by
        ``FunctionBasedImplementation._compiled_record``). Every such body needs one.
    jit_mobilizers : simtk_core.JitMobilizers, optional
        The records of the jit mobilizers (codes ``JIT_JOINT_CODES[n]``, and ``JITN_JOINT_CODES[nq, nu]``
        for those with an N kernel); every such body needs one.
    armature : array_like, shape (nu,), optional
        Each mobility's armature (rotor inertia), finite and >= 0, added to the diagonal of the mass
        matrix (zeros when omitted: the sweeps then run exactly as without).

    Returns
    -------
    simtk_core.TreeKernels
        The workspace; see this module's docstring for its arrays.
    """
    parent = np.array(parent, dtype=np.int64).reshape(-1)
    nb = parent.shape[0]
    if nb < 1:
        raise ValueError("a tree needs at least Ground (body 0)")
    jtype = list(jtype)
    if len(jtype) != nb:
        raise ValueError(f"jtype: expected {nb} entries, got {len(jtype)}")
    codes = np.zeros(nb, dtype=np.int64)
    for i, j in enumerate(jtype):
        codes[i] = joint_code(j) if isinstance(j, str) else int(j)
    custom_sizes = dict(custom_sizes or {})
    qoff = np.zeros(nb + 1, dtype=np.int64)
    uoff = np.zeros(nb + 1, dtype=np.int64)
    codes[0] = JOINT_TYPES["Weld"][0]
    for i in range(1, nb):
        if not 0 <= parent[i] < i:
            raise ValueError(f"body {i}: parent {parent[i]} must satisfy 0 <= parent < {i}")
        code = int(codes[i])
        if code in _FUNCTION_N or code in _JIT_N or code in _JITN_SIZES:
            nq_i = nu_i = _FUNCTION_N.get(code) or _JIT_N.get(code)
            if code in _JITN_SIZES:
                nq_i, nu_i = _JITN_SIZES[code]
            if code in _FUNCTION_N and (function_joints is None or i not in function_joints[1]):
                raise ValueError(f"body {i}: a FunctionBased mobilizer needs its record in function_joints")
            qoff[i + 1] = qoff[i] + nq_i
            uoff[i + 1] = uoff[i] + nu_i
            continue
        if code not in _BY_CODE:
            raise ValueError(f"body {i}: unknown joint type code {code}")
        name, nq_i, nu_i = _BY_CODE[code]
        if code == CUSTOM:
            if i not in custom_sizes:
                raise ValueError(f"body {i}: Custom mobilizer needs custom_sizes[{i}] = (nq, nu)")
            nq_i, nu_i = (int(v) for v in custom_sizes[i])
            if not (0 <= nu_i <= 6 and nq_i >= 0):
                raise ValueError(f"body {i}: Custom sizes (nq={nq_i}, nu={nu_i}) need 0 <= nu <= 6")
        qoff[i + 1] = qoff[i] + nq_i
        uoff[i + 1] = uoff[i] + nu_i
    if jparam is None:
        jparam = np.zeros((nb, 3))
    args = dict(
        jparam=_array("jparam", jparam, (nb, 3)),
        R_PF=_array("R_PF", R_PF, (nb, 3, 3)), p_PF=_array("p_PF", p_PF, (nb, 3)),
        R_BM=_array("R_BM", R_BM, (nb, 3, 3)), p_BM=_array("p_BM", p_BM, (nb, 3)),
        mass=_array("mass", mass, (nb,)), p_BC=_array("p_BC", p_BC, (nb, 3)),
        I_B=_array("I_B", I_B, (nb, 3, 3)),
    )
    for name in ("R_PF", "R_BM"):
        R = args[name]
        err = np.abs(np.einsum("nij,nkj->nik", R, R) - np.eye(3)).max(axis=(1, 2))
        bad = np.flatnonzero((err > 1e-9) | (np.linalg.det(R) < 0))
        if bad.size:
            raise ValueError(f"{name}[{bad[0]}] is not a rotation matrix")
    bad = np.flatnonzero(args["mass"][1:] < 0)
    if bad.size:
        raise ValueError(f"body {bad[0] + 1}: negative mass {args['mass'][bad[0] + 1]}")
    I = args["I_B"]
    bad = np.flatnonzero(np.abs(I - I.transpose(0, 2, 1)).max(axis=(1, 2)) > 1e-12 *
                         (1 + np.abs(I).max(axis=(1, 2))))
    if bad.size:
        raise ValueError(f"body {bad[0]}: inertia I_B is not symmetric")
    fj = None
    if function_joints is not None:
        table, records = function_joints
        bodies = sorted(int(b) for b in records)
        rec = np.full(nb, -1, dtype=np.int64)
        for r, b in enumerate(bodies):
            if not 0 < b < nb or int(codes[b]) not in _FUNCTION_N:
                raise ValueError(f"function_joints: body {b} is not a FunctionBased mobilizer of this tree")
            rec[b] = r
        fi = np.array([records[b][0] for b in bodies], dtype=np.int64).reshape(len(bodies), FB_LAYOUT["istride"])
        fd = np.array([records[b][1] for b in bodies], dtype=np.float64).reshape(len(bodies), FB_LAYOUT["dstride"])
        fj = (table, rec, fi, fd)
    arm = None
    if armature is not None:
        nu = int(uoff[nb])
        arm = _array("armature", armature, (nu,))
        bad = np.flatnonzero(arm < 0)
        if bad.size:
            b = int(np.searchsorted(uoff, bad[0], side="right")) - 1
            raise ValueError(f"body {b}: armature of u[{bad[0] - uoff[b]}] is negative ({arm[bad[0]]!r})")
    return _k.TreeKernels(parent, codes, qoff, uoff, function_joints=fj, jit_mobilizers=jit_mobilizers,
                          armature=arm, **args)


def _vec(ws, name: str, x, n: int) -> np.ndarray:
    a = np.ascontiguousarray(x, dtype=np.float64)
    if a.shape != (n,):
        raise ValueError(f"{name}: expected shape ({n},), got {a.shape}")
    return a


def _spatial(name: str, x, n: int) -> np.ndarray:
    a = np.ascontiguousarray(x, dtype=np.float64)
    if a.shape != (n, 2, 3):
        raise ValueError(f"{name}: expected shape ({n}, 2, 3), got {a.shape}")
    return a


def _out(out, shape: tuple) -> np.ndarray:
    if out is None:
        return np.zeros(shape)
    if (not isinstance(out, np.ndarray) or out.shape != shape or out.dtype != np.float64
            or not out.flags.c_contiguous or not out.flags.writeable):
        raise ValueError(f"out: expected a writable C-contiguous float64 array of shape {shape}")
    return out


def realize_position(ws, q) -> None:
    """Position kinematics and the q-only inertias for coordinates ``q`` (nq,)."""
    ws.realize_position(_vec(ws, "q", q, ws.nq))


def realize_velocity(ws, u) -> None:
    """Velocity kinematics, qdot and the bias terms for speeds ``u`` (nu,)."""
    ws.realize_velocity(_vec(ws, "u", u, ws.nu))


def forward_dynamics(ws, mobility_forces, body_forces):
    """ABA accelerations; returns ``(udot (nu,), A_GB (nb,2,3))`` (views of ws arrays)."""
    ws.forward_dynamics(_vec(ws, "mobility_forces", mobility_forces, ws.nu),
                        _spatial("body_forces", body_forces, ws.nb))
    return ws.udot, ws.A_GB


def inverse_dynamics(ws, udot, mobility_forces, body_forces, out=None) -> np.ndarray:
    """Residual ``M udot + bias - mobility_forces - J^T body_forces`` (nu,) by RNEA."""
    out = _out(out, (ws.nu,))
    ws.inverse_dynamics(_vec(ws, "udot", udot, ws.nu),
                        _vec(ws, "mobility_forces", mobility_forces, ws.nu),
                        _spatial("body_forces", body_forces, ws.nb), out)
    return out


def mass_matrix(ws, out=None) -> np.ndarray:
    """The mass matrix M (nu, nu) by CRBA."""
    out = _out(out, (ws.nu, ws.nu))
    ws.mass_matrix(out)
    return out


def multiply_by_m(ws, x, out=None) -> np.ndarray:
    """``M x`` in O(n)."""
    out = _out(out, (ws.nu,))
    ws.multiply_by_m(_vec(ws, "x", x, ws.nu), out)
    return out


def multiply_by_m_inv(ws, v, out=None) -> np.ndarray:
    """``M^-1 v`` in O(n)."""
    out = _out(out, (ws.nu,))
    ws.multiply_by_m_inv(_vec(ws, "v", v, ws.nu), out)
    return out


def jacobian(ws, u, out=None) -> np.ndarray:
    """System Jacobian product ``J u``: body spatial velocities (nb,2,3) at body origins."""
    out = _out(out, (ws.nb, 2, 3))
    ws.jacobian(_vec(ws, "u", u, ws.nu), out)
    return out


def jacobian_transpose(ws, F, out=None) -> np.ndarray:
    """``J^T F`` (nu,) for body forces F (nb,2,3) (torque about, force at the body origin)."""
    out = _out(out, (ws.nu,))
    ws.jacobian_transpose(_spatial("F", F, ws.nb), out)
    return out


def _frames(ws, bodies, stations):
    b = np.ascontiguousarray(bodies, dtype=np.int64).reshape(-1)
    s = np.ascontiguousarray(stations, dtype=np.float64)
    if s.shape != (b.shape[0], 3):
        raise ValueError(f"stations: expected shape ({b.shape[0]}, 3), got {s.shape}")
    bad = np.flatnonzero((b < 0) | (b >= ws.nb))
    if bad.size:
        raise ValueError(f"bodies[{bad[0]}] = {b[bad[0]]} is not a body index in [0, {ws.nb})")
    return b, s


def frame_jacobian(ws, bodies, stations, u, out=None) -> np.ndarray:
    """(k,2,3): angular velocity and station velocity of frames at ``stations`` (in B)."""
    b, s = _frames(ws, bodies, stations)
    out = _out(out, (b.shape[0], 2, 3))
    ws.frame_jacobian(b, s, _vec(ws, "u", u, ws.nu), out)
    return out


def frame_jacobian_transpose(ws, bodies, stations, F, out=None) -> np.ndarray:
    """(nu,): generalized forces of spatial forces F (k,2,3) applied at the stations."""
    b, s = _frames(ws, bodies, stations)
    out = _out(out, (ws.nu,))
    ws.frame_jacobian_transpose(b, s, _spatial("F", F, b.shape[0]), out)
    return out


def frame_bias(ws, bodies, stations, out=None) -> np.ndarray:
    """(k,2,3) = JDot u of the frames: their accelerations when udot = 0."""
    b, s = _frames(ws, bodies, stations)
    out = _out(out, (b.shape[0], 2, 3))
    ws.frame_bias(b, s, out)
    return out


def station_jacobian(ws, bodies, stations, u, out=None) -> np.ndarray:
    """(k,3): station velocities in Ground for speeds u."""
    res = frame_jacobian(ws, bodies, stations, u)
    out = _out(out, (res.shape[0], 3))
    out[...] = res[:, 1]
    return out


def station_jacobian_transpose(ws, bodies, stations, forces, out=None) -> np.ndarray:
    """(nu,): generalized forces of point forces (k,3) (in Ground) applied at the stations."""
    b, s = _frames(ws, bodies, stations)
    f = np.ascontiguousarray(forces, dtype=np.float64)
    if f.shape != (b.shape[0], 3):
        raise ValueError(f"forces: expected shape ({b.shape[0]}, 3), got {f.shape}")
    F = np.zeros((b.shape[0], 2, 3))
    F[:, 1] = f
    out = _out(out, (ws.nu,))
    ws.frame_jacobian_transpose(b, s, F, out)
    return out


def station_bias(ws, bodies, stations, out=None) -> np.ndarray:
    """(k,3) = JDot u of the stations: their accelerations when udot = 0."""
    res = frame_bias(ws, bodies, stations)
    out = _out(out, (res.shape[0], 3))
    out[...] = res[:, 1]
    return out


def multiply_by_n(ws, transpose: bool, x, out=None) -> np.ndarray:
    """``N x`` (x (nu,) -> (nq,)) or ``N^T x`` (x (nq,) -> (nu,)); Custom rows untouched."""
    n_in, n_out = (ws.nq, ws.nu) if transpose else (ws.nu, ws.nq)
    out = _out(out, (n_out,))
    ws.multiply_by_n(bool(transpose), _vec(ws, "x", x, n_in), out)
    return out


def multiply_by_n_inv(ws, transpose: bool, x, out=None) -> np.ndarray:
    """``N^-1 x`` (x (nq,) -> (nu,)) or ``N^-T x`` (x (nu,) -> (nq,)); Custom rows untouched."""
    n_in, n_out = (ws.nu, ws.nq) if transpose else (ws.nq, ws.nu)
    out = _out(out, (n_out,))
    ws.multiply_by_n_inv(bool(transpose), _vec(ws, "x", x, n_in), out)
    return out


# ---------------------------------------------------------------------- built-in force elements
#
# A ``simtk_core.ForceSet`` packs all elements of one built-in kind (at Instance
# stage); ``fs.add(ws, body_forces, mobility_forces)`` adds their forces from the
# workspace's realized kinematics (ws.q, ws.u, R_GB, p_GB, V_GB, p_GC, mass,
# p_BC) in one nogil call, and ``fs.energy(ws, q=None)`` gives their potential
# energy. The builders below validate everything; a caller holding arrays it
# allocated itself (the force subsystem's accumulators) may call ``fs.add`` and
# ``simtk_core.add_force_sets`` directly, which check only what keeps memory safe.

#: kind name -> (code, bodies per element, parameter names, uses (q, u) indices)
FORCE_KINDS: dict = dict(_k.FORCE_KINDS)
assert _k._force_kind_table_is_complete(), "a force kind has no row in core/forces.pxi's table"

__all__ += [
    "FORCE_KINDS", "make_force_set", "add_forces", "force_energy", "uniform_gravity_set",
    "two_point_linear_spring_set", "two_point_linear_damper_set", "two_point_constant_force_set",
    "mobility_linear_spring_set", "mobility_linear_damper_set", "mobility_constant_force_set",
    "mobility_linear_stop_set", "global_damper_set", "constant_force_set", "constant_torque_set",
    "linear_bushing_set", "coordinate_limit_set",
]


def _finite_array(name: str, x, shape: tuple) -> np.ndarray:
    a = np.array(x, dtype=np.float64, order="C", copy=True)
    if a.shape != shape:
        raise ValueError(f"{name}: expected shape {shape}, got {a.shape}")
    bad = first_non_finite(a)
    if bad >= 0:
        idx = np.unravel_index(bad, shape)
        raise ValueError(f"{name}: entry {tuple(int(i) for i in idx)} is not finite ({a[idx]!r})")
    return a


def _index_array(name: str, x, n: int) -> np.ndarray:
    raw = np.asarray(x)
    if raw.size and not np.issubdtype(raw.dtype, np.integer):
        raise ValueError(f"{name}: expected integers, got dtype {raw.dtype}")
    a = np.array(raw, dtype=np.int64, order="C").reshape(-1)
    if a.shape != (n,):
        raise ValueError(f"{name}: expected {n} indices, got shape {raw.shape}")
    bad = np.flatnonzero(a < 0)
    if bad.size:
        raise ValueError(f"{name}[{bad[0]}] = {a[bad[0]]} is negative")
    return a


def make_force_set(kind: str, *, params, bodies=None, stations=None, index=None, aux=None):
    """Validate the packed parameters of ``n`` elements of one kind and build their ForceSet.

    Parameters
    ----------
    kind : str
        A name of :data:`FORCE_KINDS` (e.g. ``"TwoPointLinearSpring"``).
    params : array_like, shape (n, npk)
        The constants of each element, in the order :data:`FORCE_KINDS` lists.
    bodies : array_like of int, shape (n, nbk), optional
        Body indices (nbk bodies per element for the kind; none for mobility kinds).
    stations : array_like, shape (n, nbk, 3), optional
        A station per body, in that body's frame.
    index : array_like of int, shape (n, 2), optional
        (q index, u index) per element, for the mobility kinds.
    aux : array_like, optional
        The HuntCrossley kind's hull vertices and excluded pairs (checked by core/contact_force.pxi).

    Returns
    -------
    simtk_core.ForceSet
    """
    try:
        code, nbk, names, uses_index = FORCE_KINDS[kind]
    except KeyError:
        raise ValueError(f"unknown force kind {kind!r}; known: {sorted(FORCE_KINDS)}") from None
    p = np.asarray(params, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] != len(names):
        raise ValueError(f"{kind}: params: expected shape (n, {len(names)}) ({', '.join(names)}), got {p.shape}")
    p = _finite_array(f"{kind}: params", p, (n := p.shape[0], len(names)))
    b, s = np.zeros((n, nbk), dtype=np.int64), np.zeros((n, nbk, 3))
    if nbk:
        if bodies is None or stations is None:
            raise ValueError(f"{kind}: needs bodies (n, {nbk}) and stations (n, {nbk}, 3)")
        b = _index_array(f"{kind}: bodies", bodies, n * nbk).reshape(n, nbk)
        s = _finite_array(f"{kind}: stations", stations, (n, nbk, 3))
    elif bodies is not None and np.size(bodies):
        raise ValueError(f"{kind}: takes no bodies")
    ix = np.zeros((n, 2), dtype=np.int64)
    if uses_index:
        if index is None:
            raise ValueError(f"{kind}: needs index (n, 2) = (q index, u index) per element")
        ix = _index_array(f"{kind}: index", index, 2 * n).reshape(n, 2)
    elif index is not None and np.size(index):
        raise ValueError(f"{kind}: takes no mobility index")
    return _k.ForceSet(code, b, s, p, ix, aux=aux)


def _column(name: str, x, n: int) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64).reshape(-1)
    if a.shape != (n,):
        raise ValueError(f"{name}: expected {n} values, got shape {np.shape(x)}")
    return a


def _rows3(name: str, x) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim == 1 and a.shape == (3,):
        a = a[None]
    if a.ndim != 2 or a.shape[1] != 3:
        raise ValueError(f"{name}: expected shape (n, 3), got {a.shape}")
    return a


def uniform_gravity_set(g, zero_height):
    """UniformGravity: g (n, 3) in Ground and zero heights (n,)."""
    g = _rows3("UniformGravity: g", g)
    h0 = _column("UniformGravity: zero_height", zero_height, g.shape[0])
    return make_force_set("UniformGravity", params=np.column_stack([g, h0]))


def _two_point(kind: str, b1, s1, b2, s2, *columns):
    b1 = np.asarray(b1).reshape(-1)
    n = b1.shape[0]
    b2 = np.asarray(b2).reshape(-1)
    if b2.shape != (n,):
        raise ValueError(f"{kind}: b1 and b2 must have the same length, got {n} and {b2.shape[0]}")
    s1, s2 = _rows3(f"{kind}: s1", s1), _rows3(f"{kind}: s2", s2)
    if s1.shape[0] != n or s2.shape[0] != n:
        raise ValueError(f"{kind}: s1 and s2 must have shape ({n}, 3)")
    params = np.column_stack([_column(f"{kind}: {name}", c, n)
                              for name, c in zip(FORCE_KINDS[kind][2], columns)]).reshape(n, len(columns))
    return make_force_set(kind, params=params, bodies=np.stack([b1, b2], axis=1),
                          stations=np.stack([s1, s2], axis=1))


def two_point_linear_spring_set(b1, s1, b2, s2, k, x0):
    """TwoPointLinearSpring: bodies b1, b2 (n,), stations s1, s2 (n, 3), k, x0 (n,)."""
    return _two_point("TwoPointLinearSpring", b1, s1, b2, s2, k, x0)


def two_point_linear_damper_set(b1, s1, b2, s2, c):
    """TwoPointLinearDamper: bodies b1, b2 (n,), stations s1, s2 (n, 3), c (n,)."""
    return _two_point("TwoPointLinearDamper", b1, s1, b2, s2, c)


def two_point_constant_force_set(b1, s1, b2, s2, f):
    """TwoPointConstantForce: bodies b1, b2 (n,), stations s1, s2 (n, 3), f (n,)."""
    return _two_point("TwoPointConstantForce", b1, s1, b2, s2, f)


def _mobility(kind: str, qi, ui, *columns):
    ui = np.asarray(ui).reshape(-1)
    n = ui.shape[0]
    qi = np.zeros(n, dtype=np.int64) if qi is None else np.asarray(qi).reshape(-1)
    if qi.shape != (n,):
        raise ValueError(f"{kind}: qi and ui must have the same length")
    params = np.column_stack([_column(f"{kind}: {name}", c, n)
                              for name, c in zip(FORCE_KINDS[kind][2], columns)]).reshape(n, len(columns))
    return make_force_set(kind, params=params, index=np.stack([qi, ui], axis=1))


def mobility_linear_spring_set(qi, ui, k, q0):
    """MobilityLinearSpring: q indices qi, u indices ui, k, q0 (n,): adds -k (q[qi] - q0) to f[ui]."""
    return _mobility("MobilityLinearSpring", qi, ui, k, q0)


def mobility_linear_damper_set(ui, c):
    """MobilityLinearDamper: u indices ui, c (n,): adds -c u[ui] to f[ui]."""
    return _mobility("MobilityLinearDamper", None, ui, c)


def mobility_coulomb_friction_set(ui, mu, v_eps):
    """MobilityCoulombFriction: u indices ui, mu and v_eps (n,): adds -mu tanh(u[ui] / v_eps) to f[ui]."""
    return _mobility("MobilityCoulombFriction", None, ui, mu, v_eps)


def mobility_constant_force_set(ui, f):
    """MobilityConstantForce: u indices ui, f (n,): adds f to f[ui]."""
    return _mobility("MobilityConstantForce", None, ui, f)


def mobility_linear_stop_set(qi, ui, k, d, q_low, q_high):
    """MobilityLinearStop: q and u indices, stiffness k, dissipation d and the stops (n,)."""
    return _mobility("MobilityLinearStop", qi, ui, k, d, q_low, q_high)


def coordinate_limit_set(qi, ui, upper_stiffness, upper_limit, lower_stiffness, lower_limit, damping, transition):
    """CoordinateLimit (OpenSim's CoordinateLimitForce): q and u indices and the six constants (n,), in SI
    units; adds the limit force to f[ui] from q[qi] and u[ui]."""
    return _mobility("CoordinateLimit", qi, ui, upper_stiffness, upper_limit, lower_stiffness, lower_limit, damping,
                     transition)


def global_damper_set(c):
    """GlobalDamper: c (n,); adds -sum(c) u to every mobility."""
    c = np.asarray(c, dtype=np.float64).reshape(-1)
    return make_force_set("GlobalDamper", params=c[:, None])


def constant_force_set(bodies, stations, f):
    """ConstantForce: bodies (n,), stations p_BS (n, 3), forces f (n, 3) in Ground."""
    b = np.asarray(bodies).reshape(-1, 1)
    n = b.shape[0]
    s = _rows3("ConstantForce: stations", stations).reshape(-1, 1, 3)
    if s.shape[0] != n:
        raise ValueError(f"ConstantForce: stations: expected shape ({n}, 3)")
    return make_force_set("ConstantForce", params=_rows3("ConstantForce: f", f), bodies=b, stations=s)


def constant_torque_set(bodies, t):
    """ConstantTorque: bodies (n,), torques t (n, 3) in Ground."""
    b = np.asarray(bodies).reshape(-1, 1)
    return make_force_set("ConstantTorque", params=_rows3("ConstantTorque: t", t), bodies=b,
                          stations=np.zeros((b.shape[0], 1, 3)))


def linear_bushing_set(b1, R_B1F, p_B1F, b2, R_B2M, p_B2M, k6, c6):
    """LinearBushing: bodies b1, b2 (n,), frames X_B1F, X_B2M as R (n, 3, 3) and p (n, 3),
    stiffnesses k6 and dampings c6 (n, 6)."""
    b1 = np.asarray(b1).reshape(-1)
    n = b1.shape[0]
    R1 = _finite_array("LinearBushing: R_B1F", R_B1F, (n, 3, 3))
    R2 = _finite_array("LinearBushing: R_B2M", R_B2M, (n, 3, 3))
    for name, R in (("R_B1F", R1), ("R_B2M", R2)):
        if not n:
            continue
        # the tolerance of Rotation.from_matrix: the kernel uses R as given
        err = np.abs(np.einsum("nij,nkj->nik", R, R) - np.eye(3)).max(axis=(1, 2))
        bad = np.flatnonzero((err > 1e-6) | (np.abs(np.linalg.det(R) - 1.0) > 1e-6))
        if bad.size:
            raise ValueError(f"LinearBushing: {name}[{bad[0]}] is not a rotation matrix")
    k6 = _finite_array("LinearBushing: k6", k6, (n, 6))
    c6 = _finite_array("LinearBushing: c6", c6, (n, 6))
    params = np.concatenate([R1.reshape(n, 9), R2.reshape(n, 9), k6, c6], axis=1)
    stations = np.stack([_rows3("LinearBushing: p_B1F", p_B1F), _rows3("LinearBushing: p_B2M", p_B2M)], axis=1)
    return make_force_set("LinearBushing", params=params, bodies=np.stack([b1, np.asarray(b2).reshape(-1)], axis=1),
                          stations=stations)


def _check_set(fs, ws) -> None:
    if not isinstance(fs, _k.ForceSet):
        raise TypeError(f"expected a simtk_core.ForceSet, got {type(fs).__name__}")
    if fs.n and fs.bodies.size and int(fs.bodies.max()) >= ws.nb:
        raise ValueError(f"force set: body index {int(fs.bodies.max())} is out of range for nb={ws.nb}")


def add_forces(fs, ws, body_forces, mobility_forces) -> int:
    """Add the forces of ForceSet ``fs`` into ``body_forces`` (nb, 2, 3) and ``mobility_forces`` (nu,).

    Reads the workspace's realized kinematics (positions for every kind, velocities for the
    dampers and the bushing). Returns the index of the first element whose forces are not finite
    (they are left out: a LinearBushing at its X-Y-Z angle singularity), or -1.
    """
    _check_set(fs, ws)
    bf = _out(body_forces, (ws.nb, 2, 3))
    mf = _out(mobility_forces, (ws.nu,))
    return int(fs.add(ws, bf, mf))


def force_energy(fs, ws, q=None) -> float:
    """Potential energy of ForceSet ``fs`` from the workspace's positions and ``q`` (nq,)
    (default: the workspace's own q); 0 for non-conservative kinds."""
    _check_set(fs, ws)
    if q is not None:
        q = np.ascontiguousarray(q, dtype=np.float64)
        if q.shape != (ws.nq,):
            raise ValueError(f"q: expected shape ({ws.nq},), got {q.shape}")
    return float(fs.energy(ws, q))


# ---------------------------------------------------------------------------------------------
# Batched dynamics (core/batch.pxi) and the thread count
# ---------------------------------------------------------------------------------------------
__all__ += ["OPENMP", "BATCH_SCHEMES", "set_num_threads", "get_num_threads", "make_tree_batch"]

#: Whether the compiled core was built with OpenMP (batched calls then use several threads).
OPENMP: bool = bool(_k.OPENMP)
#: name -> code of the fixed-step schemes of the batched ``step``.
BATCH_SCHEMES: dict = dict(_k.BATCH_SCHEMES)
_num_threads = [int(_k.omp_max_threads())]


def set_num_threads(n: int) -> None:
    """Set the default number of threads of the batched calls (``n >= 1``).

    The default is OpenMP's (``OMP_NUM_THREADS``, else the number of cores). Without OpenMP
    (see :data:`OPENMP`) the batched calls run on one thread whatever this says.
    """
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ValueError(f"set_num_threads(): expected an integer >= 1, got {n!r}")
    _num_threads[0] = int(n)


def get_num_threads() -> int:
    """The default number of threads of the batched calls (1 in effect without OpenMP)."""
    return _num_threads[0]


def make_tree_batch(ws, sets: tuple, custom: bool = False):
    """A ``simtk_core.TreeBatch`` over workspace ``ws`` with the force sets ``sets`` (evaluated in
    this order for each item). Raises ValueError for a tree with Custom mobilizers (unless ``custom``:
    a batch without sets that only lends its layout to a time loop evaluating a State) or a set that
    does not fit the tree."""
    for fs in sets:
        _check_set(fs, ws)
    return _k.TreeBatch(ws, tuple(sets), bool(custom))


# ---------------------------------------------------------------------------------------------
# The compiled time loop (core/stepper.pxi)
# ---------------------------------------------------------------------------------------------
__all__ += ["STEPPER_CTL", "STEPPER_CNT", "RUN_CODES", "make_tree_stepper", "make_state_derivative", "rk_combine",
            "error_norm", "constraint_norm", "normalize_quaternions"]

#: slot name -> index of the float64 controls and int64 counters of ``TreeStepper.run``
STEPPER_CTL: dict = dict(_k.STEPPER_CTL)
STEPPER_CNT: dict = dict(_k.STEPPER_CNT)
#: why ``TreeStepper.run`` returned: "reached", "step_limit", "python"
RUN_CODES: dict = dict(_k.RUN_CODES)
#: ``rk_combine(out, y0, h, a, K)``: out = y0 + (sum_k a[k] K[k]) h, summed from k = 0 up (y0 may be None)
rk_combine = _k.rk_combine
#: ``error_norm(err, y0, y1, w, infinity)``: the integrators' weighted RMS (or max) error norm;
#: ``constraint_norm(v, infinity)``: max |v| or the RMS of v, summed in index order
error_norm, constraint_norm = _k.error_norm, _k.constraint_norm


def normalize_quaternions(q, qoff) -> None:
    """``q[o:o+4] /= |q[o:o+4]|`` in place for each offset ``o`` of ``qoff`` (the projection of
    quaternion coordinates; the compiled time loop does the same)."""
    _k.normalize_quaternions(q, np.ascontiguousarray(qoff, dtype=np.int64))


def make_tree_stepper(batch, method: str, A=None, b=None, e=None, *, fsal: bool = False, error_control: bool = True,
                      quaternion_q=(), quaternion_bodies=(), constraints=None, c=None, state_derivative=None,
                      nz: int = 0):
    """A ``simtk_core.TreeStepper`` over ``batch`` (a TreeBatch) for ``method``: "rk" (with the
    table ``A`` (s, s), ``b`` (n_inner,), ``e`` (s,), the nodes ``c`` (s,; None: zeros) and ``fsal``),
    "semi_explicit" or "verlet". ``quaternion_q`` are the offsets in y of the quaternion coordinates,
    ``quaternion_bodies`` their bodies: they are projected (normalized) and weighted as the integrators do.
    ``constraints``: a ``simtk_core.LoopConstraints`` (solved and projected in the steps) or None.
    ``state_derivative``: a ``simtk_core.StateDerivative`` (see ``make_state_derivative``) when the
    derivatives come from a State realized by its System (``batch`` then has no force sets). ``nz``: without
    one, the State's z, all owned by elements of the force sets with state (muscles), stepped with (q, u) by a
    Runge-Kutta table."""
    z, qq, qb = np.zeros(1), np.asarray(quaternion_q, dtype=np.int64), np.asarray(quaternion_bodies, dtype=np.int64)
    return _k.TreeStepper(batch, _k.STEPPER_METHODS[method], np.zeros((1, 1)) if A is None else A, z if b is None
                          else b, z if e is None else e, bool(fsal), bool(error_control), qq, qb, constraints, c,
                          state_derivative, int(nz))


def make_state_derivative(system, state, acceleration_stage: int, retake: type, velocity_stage: int):
    """A ``simtk_core.StateDerivative``: y' = (qdot, udot, zdot) of ``state`` realized to ``acceleration_stage`` by
    ``system.realize``, as the integrators' Python path evaluates it, for the compiled time loop. An
    exception of class ``retake`` (a step adjustment) hands the step back to Python to take again;
    any other fails the step (``RUN_CODES["raised"]``) and is kept in ``.raised``. ``velocity_stage``:
    where the semi-explicit step realizes its qdot = N(q0) u1."""
    return _k.StateDerivative(system, state, acceleration_stage, retake, None, velocity_stage)


__all__ += ["FN_FAMILIES", "FunctionTable"]  # core/functions.pxi, built by common.function.FunctionTableBuilder
FN_FAMILIES, FunctionTable = dict(_k.FN_FAMILIES), _k.FunctionTable


# Extension helpers (core/helpers.pxi): the common cases of the helpers users' code calls once per evaluation. Each
# checks its own arguments, cheaply, and returns None or False, having done nothing, where a check fails; the calling
# method's Python path then converts the unusual input or raises the error that says what is wrong.
__all__ += ["mobod_station", "mobod_row", "mobod_pose", "mobod_add_station_force", "mobod_add_mobility_force",
            "add_to_row", "ancestor_station", "ancestor_body_pose", "ancestor_body_motion", "ancestor_add_station_force"]
mobod_station, mobod_row, mobod_pose, add_to_row = _k.mobod_station, _k.mobod_row, _k.mobod_pose, _k.add_to_row
mobod_add_station_force, mobod_add_mobility_force = _k.mobod_add_station_force, _k.mobod_add_mobility_force
ancestor_station, ancestor_body_pose, ancestor_body_motion = _k.ancestor_station, _k.ancestor_body_pose, _k.ancestor_body_motion
ancestor_add_station_force = _k.ancestor_add_station_force
