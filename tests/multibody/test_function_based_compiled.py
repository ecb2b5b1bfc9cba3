"""MobilizedBody.FunctionBased as a compiled joint kind (core/function_joint.pxi).

A FunctionBased whose six functions are built-in families is computed by the kernels; its Python
implementation (``FunctionBasedImplementation``, the path of a FunctionBased with a user's Function) is
the oracle. The two compute the same equations, the Python with numpy's matrix products (a BLAS that may
fuse or reorder), so they agree to round-off: each comparison allows ``margin * EPS * scale`` with the
scale of the terms compared (tests/tolerances.py). What the compiled kind makes possible (the fused
realization, the batch, the functional forms, the compiled time loop) is the same computation as the
State's: those comparisons are bitwise.
"""
from __future__ import annotations

import pickle
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "math"))
from test_compiled_loop import assert_same_integrators, counting_compiled_steps, drive, twins  # noqa: E402

from simtk import (  # noqa: E402
    Body,
    Constraint,
    Force,
    Function,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    SimbodyMatterSubsystem,
    Stage,
    Transform,
    _core,
)
from simtk.io._osim_functions import SimmSplineFunction, _Scaled  # noqa: E402
from simtk.math import RungeKuttaMersonIntegrator  # noqa: E402
from simtk.multibody.tree.function_based import FunctionBased  # noqa: E402
from simtk.spatial import Rotation  # noqa: E402
from tolerances import EPS, assert_close, scale_of  # noqa: E402

XS = np.linspace(-2.0, 2.0, 9)

#: Every compiled family as a one-argument coordinate function (OpenSim's SimmSpline and
#: MultiplierFunction through simtk.io, as a CustomJoint loads them).
FAMILIES = {
    "Constant": lambda: Function.Constant(0.35, 1),
    "Linear": lambda: Function.Linear([0.8, -0.1]),
    "Polynomial": lambda: Function.Polynomial([0.05, -0.2, 0.9, 0.1]),
    "Sinusoid": lambda: Function.Sinusoid(0.7, 1.3, 0.2),
    "Step": lambda: Function.Step(-0.2, 0.4, -1.5, 1.5),
    "Spline": lambda: Function.Spline(XS, 0.3 * np.sin(XS) + 0.1 * XS),
    "SimmSpline": lambda: SimmSplineFunction(XS, 0.05 * XS ** 2 - 0.2 * XS),
    "Multiplier": lambda: _Scaled(SimmSplineFunction(XS, 0.3 * np.cos(XS)), 1.7),
}


class Wrapped(Function):
    """A user's Function that evaluates a built-in one: the same numbers, no compiled form."""

    def __init__(self, f: Function):
        self.f = f

    def calc_value(self, x):
        return self.f.calc_value_unchecked(np.asarray(x, dtype=np.float64))

    def calc_derivative(self, comps, x):
        return self.f.calc_derivative_unchecked(tuple(comps), np.asarray(x, dtype=np.float64))

    def get_argument_size(self):
        return self.f.get_argument_size()

    def get_max_derivative_order(self):
        return self.f.get_max_derivative_order()


@contextmanager
def python_kind():
    """FunctionBased mobilizers made inside are the Python (Custom) kind: the oracle."""
    saved = FunctionBased._use_compiled_kind
    FunctionBased._use_compiled_kind = False
    try:
        yield
    finally:
        FunctionBased._use_compiled_kind = saved


def unit(v) -> np.ndarray:
    v = np.asarray(v, dtype=float)
    return v / np.linalg.norm(v)


def random_axes(rng) -> list:
    """Three rotation and three translation axes, well apart within each group."""
    while True:
        A = [unit(rng.normal(size=3)) for _ in range(6)]
        if all(np.linalg.norm(np.cross(A[i], A[j])) > 0.3 for g in (range(3), range(3, 6)) for i in g for j in g
               if i < j):
            return A


def random_joint(rng, n: int) -> tuple:
    """(functions, coord_indices, axes) of n mobilities: coordinate j is carried by a Linear function in
    its own slot (so H has full rank); the other slots are constants (zero or not, as OpenSim's
    coordinate-free axes and a folded constant rotation) or random families of random coordinates."""
    slots = rng.permutation(6)
    functions, indices = [None] * 6, [None] * 6
    for j in range(n):
        k = int(slots[j])
        extra = [int(c) for c in rng.choice(n, size=int(rng.integers(0, min(n, 3))), replace=False) if c != j]
        args = [j] + extra
        functions[k] = Function.Linear(list(rng.choice([-1, 1]) * rng.uniform(0.6, 1.4, len(args)))
                                       + [rng.uniform(-0.2, 0.2)])
        indices[k] = args
    for k in slots[n:]:
        k = int(k)
        pick = rng.integers(0, 4)
        if pick == 0:
            functions[k], indices[k] = Function.Constant(0.0, 0), []
        elif pick == 1:
            functions[k], indices[k] = Function.Constant(float(rng.uniform(-0.5, 0.5)), 0), []
        else:
            name = list(FAMILIES)[int(rng.integers(0, len(FAMILIES)))]
            functions[k], indices[k] = FAMILIES[name](), [int(rng.integers(0, n))]
    return functions, indices, random_axes(rng)


BODY = Body.Rigid(MassProperties.from_central_inertia(1.3, [0.05, -0.2, 0.1], Inertia([0.04, 0.02, 0.05])))


def chain(joints, gravity: bool = True, wrap=lambda f: f):
    """A chain of FunctionBased bodies (joints: (functions, indices, axes) each) under gravity; the
    functions passed through ``wrap``. Returns (system, matter, bodies)."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    if gravity:
        Force.UniformGravity(forces, matter, [0, -9.81, 0])
    parent, bodies = matter.ground, []
    for i, (functions, indices, axes) in enumerate(joints):
        n = len({c for ci in indices for c in ci})
        X_PF = Transform(Rotation(0.3 * i, "x"), [0.1, -0.4, 0.05]) if i else Transform()
        parent = MobilizedBody.FunctionBased(parent, X_PF, BODY, Transform([0.02, 0.1, 0.0]), n,
                                             [wrap(f) for f in functions], indices, axes)
        bodies.append(parent)
    return system, matter, bodies


def twin_chains(joints, wrap_python: bool = False):
    """The same chain as the compiled kind and as the Python kind (by the private switch, or by
    wrapping every function in a user's Function)."""
    compiled = chain(joints)
    if wrap_python:
        python = chain(joints, wrap=Wrapped)
    else:
        with python_kind():
            python = chain(joints)
    return compiled, python


def realized(model, q, u, stage=Stage.Acceleration):
    system, matter, bodies = model
    state = system.realize_topology()
    state.set_q(q)
    state.set_u(u)
    system.realize(state, stage)
    return state


def rows(model, state) -> dict:
    """What the mobilizers' kinematics wrote into the kernels' arrays, and the dynamics."""
    system, matter, bodies = model
    ws = matter._cache(state).ws
    idx = [b.get_mobilized_body_index() for b in bodies]
    nu = state.get_nu()
    return {"R_FM": ws.R_FM[idx].copy(), "p_FM": ws.p_FM[idx].copy(), "H_FM": ws.H_FM.copy(),
            "HDotu_FM": ws.HDotu_FM[idx].copy(), "qdot": state.get_qdot().copy(), "udot": state.get_udot().copy(),
            "qdotdot": state.get_qdotdot().copy(), "M": matter.calc_m(state),
            "ID": matter.calc_residual_force_ignoring_constraints(state, np.ones(nu), np.zeros((ws.nb, 2, 3)),
                                                                  np.linspace(-1, 1, nu))}


#: Round-off margins: one joint's kinematics (a few dozen flops through the function evaluations and
#: three 3x3 products) and a sweep over a short chain (M, inverse dynamics, ABA), for which the
#: condition number of M multiplies the margin of udot.
JOINT = 2**6
SWEEP = 2**10


def assert_match(a: dict, b: dict, where: str) -> None:
    """Compiled (a) against the Python oracle (b), each quantity at the scale of its terms."""
    for key in ("R_FM", "p_FM", "H_FM", "HDotu_FM", "qdot"):
        assert_close(a[key], b[key], margin=JOINT, scale=scale_of(b[key], floor=1.0), what=f"{where}: {key}")
    assert_close(a["M"], b["M"], margin=SWEEP, scale=scale_of(b["M"]), what=f"{where}: M")
    assert_close(a["ID"], b["ID"], margin=SWEEP, scale=scale_of(b["ID"], b["M"], floor=1.0), what=f"{where}: ID")
    cond = float(np.linalg.cond(b["M"]))
    scale = cond * scale_of(b["udot"], floor=1.0)
    assert_close(a["udot"], b["udot"], margin=SWEEP, scale=scale, what=f"{where}: udot (cond(M) = {cond:.3g})")
    # qdot = u and qdotdot = udot on both paths, exactly
    np.testing.assert_array_equal(a["qdotdot"], a["udot"])


def kinds(model) -> list:
    system, matter, bodies = model
    state = system.realize_topology()
    system.realize(state, Stage.Model)
    codes = matter._layout(state).codes
    return [int(codes[b.get_mobilized_body_index()]) for b in bodies]


# ---------------------------------------------------------------------------------------------- the kind
def test_built_in_functions_make_the_compiled_kind_and_a_user_function_the_python_one():
    """All six functions built in: the code of an n-mobility FunctionBased, not a Custom mobilizer; one
    user's Function (even a wrapped built-in), or the private switch, keeps the Python (Custom) kind."""
    rng = np.random.default_rng(1)
    joints = [random_joint(rng, n) for n in (1, 3)]
    compiled, python = twin_chains(joints)
    assert kinds(compiled) == [_core.function_joint_code(1), _core.function_joint_code(3)]
    assert kinds(python) == [_core.CUSTOM] * 2
    assert kinds(chain(joints, wrap=Wrapped)) == [_core.CUSTOM] * 2
    one_user = [(list(joints[0][0]), joints[0][1], joints[0][2])]
    k = next(k for k in range(6) if joints[0][1][k])
    one_user[0][0][k] = Wrapped(one_user[0][0][k])
    assert kinds(chain(one_user)) == [_core.CUSTOM]
    # the public API is the constructor's arguments either way
    for (_, _, (b1,)), (_, _, (b2,)) in [(chain(joints[:1]), chain(joints[:1], wrap=Wrapped))]:
        assert b1.get_n_mobilities() == b2.get_n_mobilities() == 1
        assert [ci.tolist() for ci in b1.get_coord_indices()] == [ci.tolist() for ci in b2.get_coord_indices()]
        np.testing.assert_array_equal(b1.get_axes(), b2.get_axes())
        assert b1.get_functions() == joints[0][0]


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_family_as_a_coordinate_function_matches_the_python_implementation(family):
    """Family f in a rotation (about a turned axis) and a translation of a two-mobility joint, each
    coordinate also carried by a Linear function: X_FM, H, HDot u, udot, M and inverse dynamics of
    the compiled kind equal the Python implementation's to round-off, for random q and u."""
    rng = np.random.default_rng(sorted(FAMILIES).index(family))
    functions = [Function.Linear([0.9, 0.1]), FAMILIES[family](), Function.Linear([1.1, -0.2]),
                 FAMILIES[family](), Function.Linear([0.7, 0.0]), Function.Constant(0.15, 0)]
    indices = [[0], [0], [1], [1], [1], []]
    axes = random_axes(rng)
    compiled, python = twin_chains([(functions, indices, axes), random_joint(rng, 2)])
    assert kinds(compiled)[0] == _core.function_joint_code(2)
    for trial in range(5):
        q, u = rng.uniform(-1.4, 1.4, 4), rng.uniform(-2, 2, 4)
        assert_match(rows(compiled, realized(compiled, q, u)), rows(python, realized(python, q, u)),
                     f"{family}, trial {trial}")


@pytest.mark.parametrize("seed", range(12))
def test_random_chains_of_one_to_six_mobilities_match_the_python_implementation(seed):
    """Chains of three FunctionBased joints of 1 to 6 mobilities (random families, multi-argument
    Linear functions, constant and active rotations in any slot, random axes): compiled against the
    Python implementation, to round-off."""
    rng = np.random.default_rng(100 + seed)
    ns = [1 + (seed + k) % 6 for k in range(3)]
    joints = [random_joint(rng, n) for n in ns]
    compiled, python = twin_chains(joints, wrap_python=seed % 2 == 1)
    nq = sum(ns)
    for trial in range(3):
        q, u = rng.uniform(-1.2, 1.2, nq), rng.uniform(-1.5, 1.5, nq)
        sc, sp = realized(compiled, q, u), realized(python, q, u)
        assert_match(rows(compiled, sc), rows(python, sp), f"n = {ns}, trial {trial}")
        # quaternion-free: no quaternion to normalize, no position error slots
        assert len(compiled[1]._layout(sc).quaternion_bodies) == 0 and sc.get_nq_err() == sp.get_nq_err() == 0


# ---------------------------------------------------------------------------------------------- the fast paths
def gait_like(rng):
    """A pelvis of six coordinates on Ground, then two legs of a three-coordinate hip, a knee of one
    coordinate (spline translations, OpenSim's knee) and a one-coordinate ankle."""
    knee = ([Function.Constant(0.0, 0), Function.Constant(0.0, 0), Function.Linear([1.0, 0.0]),
             SimmSplineFunction(XS, 0.004 * np.sin(XS)), SimmSplineFunction(XS, -0.4 + 0.003 * XS ** 2),
             Function.Constant(0.0, 0)], [[], [], [0], [0], [0], []], None)
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    eye = [Function.Linear([1.0, 0.0]) for _ in range(6)]
    pelvis = MobilizedBody.FunctionBased(matter.ground, BODY, 6, eye, [[k] for k in range(6)])
    bodies = [pelvis]
    for side in (1, -1):
        hip = MobilizedBody.FunctionBased(pelvis, Transform([0, -0.1, 0.08 * side]), BODY, Transform(), 3,
                                          [Function.Linear([1.0, 0.0]) for _ in range(3)]
                                          + [Function.Constant(0.0, 0)] * 3, [[0], [1], [2], [], [], []])
        k = MobilizedBody.FunctionBased(hip, Transform([0, -0.2, 0]), BODY, Transform(), 1, *knee[:2])
        ankle = MobilizedBody.FunctionBased(k, Transform([0, -0.4, 0]), BODY, Transform(), 1,
                                            [Function.Constant(0.0, 0), Function.Constant(0.0, 0),
                                             Function.Linear([1.0, 0.0])] + [Function.Constant(0.0, 0)] * 3,
                                            [[], [], [0], [], [], []])
        bodies += [hip, k, ankle]
    Force.MobilityLinearSpring(forces, bodies[2], 0, 30.0, -0.5)
    Force.GlobalDamper(forces, matter, 0.3)
    state = system.realize_topology()
    state.set_q(rng.uniform(-0.3, 0.3, state.get_nq()))
    state.set_u(rng.uniform(-0.5, 0.5, state.get_nu()))
    return system, matter, bodies, state


def test_fused_realization_batch_and_functional_forms_take_it_bitwise():
    """The compiled kind is no Custom mobilizer: the State takes the fused realization (equal to the
    hooks' bitwise), and calc_udot_batch and functional_dynamics equal the State's udot bitwise."""
    rng = np.random.default_rng(5)
    system, matter, bodies, state = gait_like(rng)
    hooks = state.copy()
    hooks._fused = False
    system.realize(state, Stage.Acceleration)
    system.realize(hooks, Stage.Acceleration)
    assert state._fused and not matter._cache(state).layout.custom
    for get in ("get_q", "get_qdot", "get_udot", "get_qdotdot"):
        np.testing.assert_array_equal(getattr(state, get)(), getattr(hooks, get)(), err_msg=get)
    Q = np.vstack([state.get_q(), rng.uniform(-0.4, 0.4, (3, state.get_nq()))])
    U = np.vstack([state.get_u(), rng.uniform(-0.6, 0.6, (3, state.get_nu()))])
    udot = matter.calc_udot_batch(Q, U, state=state)
    fd = matter.functional_dynamics(state)
    for k in range(Q.shape[0]):
        s = state.copy()
        s.set_q(Q[k])
        s.set_u(U[k])
        system.realize(s, Stage.Acceleration)
        np.testing.assert_array_equal(udot[k], s.get_udot(), err_msg=f"batch row {k}")
        np.testing.assert_array_equal(fd.calc_udot(Q[k], U[k]), s.get_udot(), err_msg=f"functional row {k}")


@pytest.mark.parametrize("accuracy", [1e-3, 1e-6])
def test_compiled_time_loop_equals_the_python_loop_bitwise(accuracy):
    """RK-Merson over a gait-like chain of FunctionBased joints (16 coordinates): the compiled time
    loop runs it, and its trajectory, statistics and State equal the Python loop's bitwise."""
    system, matter, bodies, state = gait_like(np.random.default_rng(7))
    system.realize(state, Stage.Acceleration)
    a, b = twins(system, RungeKuttaMersonIntegrator, lambda i: i.set_accuracy(accuracy))
    for integ in (a, b):
        integ.initialize(state)
    assert a.describe_fast_path().startswith("compiled time loop:"), a.describe_fast_path()
    with counting_compiled_steps() as compiled_steps:
        _, how = drive(a, b, [0.1, 0.25, 0.5])
    assert how == "reached"
    assert_same_integrators(a, b, "the end")
    assert compiled_steps[0] == a.get_num_steps_taken() > 10


def test_compiled_kind_trajectory_matches_the_python_kind():
    """The same chain as the Python kind (the oracle) after 0.5 s of RK-Merson at 1e-8: the two
    kinds' derivatives differ by round-off only, so the trajectories agree to the accuracy."""
    rng = np.random.default_rng(11)
    joints = [random_joint(rng, n) for n in (2, 1, 3)]
    compiled, python = twin_chains(joints)
    q, u = rng.uniform(-0.5, 0.5, 6), rng.uniform(-0.5, 0.5, 6)
    ends = []
    for system, matter, bodies in (compiled, python):
        state = realized((system, matter, bodies), q, u)
        integ = RungeKuttaMersonIntegrator(system)
        integ.set_accuracy(1e-8)
        integ.initialize(state)
        integ.step_to(0.5)
        ends.append(integ.get_state().get_y().copy())
    np.testing.assert_allclose(ends[0], ends[1], rtol=0, atol=1e-6)  # the method's accuracy, not round-off


def test_copies_and_pickles_keep_the_records_and_the_scratch():
    """A realized State copied or pickled continues bitwise: the records (and their function table)
    travel with the workspace, and the per-State scratch that Velocity reads is the copy's own."""
    system, matter, bodies, state = gait_like(np.random.default_rng(3))
    system.realize(state, Stage.Position)
    system2, matter2, other = pickle.loads(pickle.dumps((system, matter, state)))
    copy = state.copy()
    ref = state.copy()
    elsewhere = state.copy()
    elsewhere.set_q(state.get_q() + 0.3)
    system.realize(elsewhere, Stage.Position)  # another State's position sweep: not this one's scratch
    for s in (state, copy, ref):
        system.realize(s, Stage.Acceleration)
    system2.realize(other, Stage.Acceleration)
    for s, m in ((other, matter2), (copy, matter)):
        np.testing.assert_array_equal(s.get_udot(), ref.get_udot())
        np.testing.assert_array_equal(m._cache(s).ws.HDotu_FM, matter._cache(ref).ws.HDotu_FM)
    assert matter2._cache(other).ws.nfb == 7


def test_bad_records_are_refused_when_the_workspace_is_made():
    """The kernels read the records unchecked, so TreeKernels checks them: an entry outside the
    table, an argument outside the joint's coordinates, a record missing."""
    rng = np.random.default_rng(2)
    (system, matter, bodies), _ = twin_chains([random_joint(rng, 2)])
    state = system.realize_topology()
    system.realize(state, Stage.Instance)
    ws = matter._cache(state).ws
    L = _core.FB_LAYOUT
    args = dict(R_PF=ws.R_PF, p_PF=ws.p_PF, R_BM=ws.R_BM, p_BM=ws.p_BM, mass=ws.mass, p_BC=ws.p_BC, I_B=ws.I_B)
    ok = (ws.fn_table, {1: (ws.fbi[0], ws.fbd[0])})
    _core.make_tree_kernels(ws.parent, ws.jtype, function_joints=ok, **args)
    k = next(k for k in range(6) if ws.fbi[0][L["i_fn"] + L["i_fstride"] * k] >= 0)
    at = L["i_fn"] + L["i_fstride"] * k
    for where, value, words in ((at, len(ws.fn_table), "outside the table"), (at + 2, 2, "outside [0, 2)")):
        bad = ws.fbi[0].copy()
        bad[where] = value
        with pytest.raises(ValueError, match=words.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
            _core.make_tree_kernels(ws.parent, ws.jtype, function_joints=(ws.fn_table, {1: (bad, ws.fbd[0])}),
                                    **args)
    with pytest.raises(ValueError, match="needs its record"):
        _core.make_tree_kernels(ws.parent, ws.jtype, **args)


def test_round_off_scale_of_the_comparisons_is_meaningful():
    """The oracle comparisons are not vacuous: a compiled joint whose function is changed by one part
    in 1e10 is told apart from the Python implementation by assert_match's bound."""
    rng = np.random.default_rng(4)
    joint = random_joint(rng, 2)
    compiled = chain([joint])
    functions = list(joint[0])
    k = next(k for k in range(6) if joint[1][k] and isinstance(functions[k], type(Function.Linear([1.0, 0.0]))))
    c = functions[k].get_coefficients() if hasattr(functions[k], "get_coefficients") else None
    if c is None:
        pytest.skip("Linear exposes no coefficients")
    functions[k] = Function.Linear(np.asarray(c) * (1 + 1e-10))
    with python_kind():
        python = chain([(functions, joint[1], joint[2])])
    q, u = rng.uniform(-1, 1, 2), rng.uniform(-1, 1, 2)
    with pytest.raises(AssertionError):
        assert_match(rows(compiled, realized(compiled, q, u)), rows(python, realized(python, q, u)), "perturbed")
    assert 1e-10 > SWEEP * EPS * 100


def test_coordinate_constraints_reach_the_compiled_kind_as_a_built_in_joint():
    """Coordinate-level constraints are refused on Custom mobilizers; the compiled kind is a joint of the
    kernels (qdot = u), so a coupler q_0 = q_1 on a chain of FunctionBased pins (rotation Linear(q)
    about z) moves it as the same coupler moves a chain of Pins."""
    def make(kind):
        system = MultibodySystem()
        matter = SimbodyMatterSubsystem(system)
        forces = GeneralForceSubsystem(system)
        Force.UniformGravity(forces, matter, [0, -9.81, 0])
        parent, bodies = matter.ground, []
        for i in range(3):
            X_PF = Transform([0.1, -0.5, 0]) if i else Transform()
            if kind == "Pin":
                parent = MobilizedBody.Pin(parent, X_PF, BODY, Transform())
            else:
                functions = [Function.Constant(0.0, 0)] * 6
                functions[2] = Function.Linear([1.0, 0.0])
                parent = MobilizedBody.FunctionBased(parent, X_PF, BODY, Transform(), 1, functions,
                                                     [[], [], [0], [], [], []])
            bodies.append(parent)
        Constraint.CoordinateCoupler(matter, Function.Linear([1.0, -1.0, 0.0]), bodies[:2], [0, 0])
        state = system.realize_topology()
        state.set_q([0.3, 0.3, -0.2])
        state.set_u([0.5, 0.5, 1.0])
        system.realize(state, Stage.Acceleration)
        return (system, matter, bodies), state

    ((_, mp, _), sp), (model, sf) = make("Pin"), make("FunctionBased")
    assert kinds(model) == [_core.function_joint_code(1)] * 3
    udot = sp.get_udot()
    assert abs(udot[0] - udot[1]) <= 64 * EPS * scale_of(udot)  # the coupler holds
    # a pin's rotation as R(z, q) = P + cos(q) Q + sin(q) K and H = z J: the built-in's numbers up to the
    # sweeps' round-off, times the constrained solve's condition
    cond = float(np.linalg.cond(mp.calc_m(sp)))
    assert_close(sf.get_udot(), udot, margin=SWEEP, scale=cond * scale_of(udot), what="udot")
