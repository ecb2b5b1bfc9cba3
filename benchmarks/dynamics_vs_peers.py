"""Time simtk's public multibody API against its peers (Pinocchio) on the same models, in one run.

Models: serial chains of 7, 30, 100 and 300 Pin joints, and a 40-body depth-first tree mixing
Pin, Slider, Ball and Free mobilizers; random frames and mass properties, uniform gravity. Each
model is built twice, through simtk's public API (MultibodySystem, MobilizedBody.*,
Force.UniformGravity) and as a ``pinocchio.Model`` with the same physics (Simbody's q/u mapped to
Pinocchio's, see tests/multibody/test_system_pinocchio.py), and the two are checked to agree.

Timed operations (microseconds per call, best of several ``timeit`` repeats):

=============  ================================================================  ===============
column         simtk                                                             peer
=============  ================================================================  ===============
FD             ``state.set_u(u)``; ``system.realize(state, Stage.Acceleration)``  ``pin.aba``
FD(q)          the same after ``state.set_q(q)``: every stage from Position       ``pin.aba``
M              ``matter.calc_m(state)`` on a realized State                      ``pin.crba``
M(q)           ``state.set_q(q)``; ``realize(state, Stage.Position)``; ``calc_m``  ``pin.crba``
ID             ``matter.calc_residual_force_ignoring_constraints(...)``          ``pin.rnea``
ID(q)          ``set_q``; ``realize(state, Stage.Velocity)``; the residual       ``pin.rnea``
=============  ================================================================  ===============

The first form of each is what the issue asks for and what a simulation pays: FD after ``set_u``
reuses the Position stage (kinematics, articulated inertias, gravity), and ``calc_m`` and the
residual reuse the realized kinematics and velocity terms. Pinocchio's functions always start from
(q, v), so the ``(q)`` forms, which redo every stage from Position, are the like-for-like
comparison. (Pinocchio's ``Data`` for a 300-body chain takes ~1.7 GB here, growing as ~n^3 in
pinocchio 4.1, so chains much longer than 300 cannot be compared on this machine.)

Run: ``python benchmarks/dynamics_vs_peers.py [--profile] [--quick]``. ``--profile`` adds a
cProfile of the 7-body chain's FD, M and ID loops (where the Python overhead goes).
"""
from __future__ import annotations

import argparse
import cProfile
import io
import platform
import pstats
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
    SimbodyMatterSubsystem,
    Stage,
    Transform,
)

try:
    import pinocchio as pin
except ImportError:  # a missing peer is skipped, not an error
    pin = None

GRAVITY = np.array([0.0, -9.81, 0.0])


# ---------------------------------------------------------------------- models
def _rotation(rng) -> Rotation:
    q = rng.normal(size=4)
    return Rotation.from_quaternion(q / np.linalg.norm(q))


def random_bodies(rng, n: int, joints, chain: bool):
    """(joint, parent, X_PF, X_BM, mass, com, central inertia) per body, depth-first numbered."""
    out, path = [], [0]
    for i in range(1, n + 1):
        if chain:
            parent = i - 1
        else:
            parent = path[int(rng.integers(0, len(path)))]
            path = path[:path.index(parent) + 1] + [i]
        joint = joints[int(rng.integers(0, len(joints)))]
        X_PF = Transform(_rotation(rng), [0.3, 0.0, 0.0] if parent else [0.0, 0.0, 0.0])
        X_BM = Transform(_rotation(rng), rng.uniform(-0.1, 0.1, 3))
        mass = float(rng.uniform(0.5, 2.0))
        R = _rotation(rng).matrix
        a, b, c = rng.uniform(0.1, 0.4, 3) ** 2  # a solid box's moments always satisfy the triangle inequality
        I_C = R @ np.diag(mass / 12 * np.array([b + c, a + c, a + b])) @ R.T
        out.append((joint, parent, X_PF, X_BM, mass, np.array([0.15, 0.0, 0.0]), 0.5 * (I_C + I_C.T)))
    return out


def build_simtk(bodies):
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, GRAVITY)
    mobods = [matter.ground]
    for joint, parent, X_PF, X_BM, mass, com, I_C in bodies:
        body = Body.Rigid(MassProperties.from_central_inertia(mass, com, Inertia.from_matrix(I_C)))
        mobods.append(getattr(MobilizedBody, joint)(mobods[parent], X_PF, body, X_BM))
    return system, matter, mobods


def build_pinocchio(bodies):
    model = pin.Model()
    model.gravity = pin.Motion(GRAVITY, np.zeros(3))
    kinds = {"Pin": pin.JointModelRZ, "Slider": pin.JointModelPX, "Ball": pin.JointModelSpherical,
             "Free": pin.JointModelFreeFlyer}
    for i, (joint, parent, X_PF, X_BM, mass, com, I_C) in enumerate(bodies, start=1):
        X = X_PF if parent == 0 else ~bodies[parent - 1][3] * X_PF  # the parent's M frame is its joint frame
        jid = model.addJoint(parent, kinds[joint](), pin.SE3(X.R.matrix.copy(), X.p.copy()), f"j{i}")
        X_MB = ~X_BM
        R = X_MB.R.matrix
        model.appendBodyToJoint(jid, pin.Inertia(mass, X_MB * com, R @ I_C @ R.T), pin.SE3.Identity())
    return model


def pinocchio_state(bodies, mobods, state):
    """(q_pin, v_pin, T, Tdot_v) for the simtk state: u = T v_pin, udot = T vdot + Tdot_v."""
    nu = state.get_nu()
    T, Tdot_v, q_parts = np.zeros((nu, nu)), np.zeros(nu), []
    a = 0
    for (joint, *_), mb in zip(bodies, mobods[1:]):
        q = np.array(mb.get_q(state))
        R = mb.get_mobilizer_transform(state).R.matrix
        if joint in ("Pin", "Slider"):
            T[a, a] = 1.0
        elif joint == "Ball":
            T[a:a + 3, a:a + 3] = R
            q = np.r_[q[1:4], q[0]]
        else:
            T[a:a + 3, a + 3:a + 6] = R
            T[a + 3:a + 6, a:a + 3] = R
            q = np.r_[q[4:7], q[1:4], q[0]]
        q_parts.append(q)
        a += mb.get_num_u(state)
    v = np.linalg.solve(T, np.array(state.get_u()))
    a = 0
    for (joint, *_), mb in zip(bodies, mobods[1:]):
        if joint == "Free":
            R = mb.get_mobilizer_transform(state).R.matrix
            Tdot_v[a + 3:a + 6] = R @ np.cross(v[a + 3:a + 6], v[a:a + 3])
        a += mb.get_num_u(state)
    return np.concatenate(q_parts), v, T, Tdot_v


# ---------------------------------------------------------------------- timing
def best_us(fn, repeat: int = 7, budget: float = 0.05) -> float:
    """Best time per call in microseconds; ``number`` chosen so one repeat takes ~budget seconds."""
    timer = timeit.Timer(fn)
    number, elapsed = 1, 0.0
    while elapsed < budget / 4:
        number *= 2
        elapsed = timer.timeit(number)
    number = max(1, int(number * budget / max(elapsed, 1e-9)))
    return min(timer.repeat(repeat=repeat, number=number)) / number * 1e6


class Case:
    """One model in both libraries with a random state, and the operations to time."""

    def __init__(self, name: str, bodies, rng):
        self.name, self.bodies = name, bodies
        self.system, self.matter, self.mobods = build_simtk(bodies)
        s = self.state = self.system.realize_topology()
        for (joint, *_), mb in zip(bodies, self.mobods[1:]):
            q = rng.uniform(-1, 1, mb.get_num_q(s))
            if joint in ("Ball", "Free"):
                quat = rng.normal(size=4)
                q[:4] = quat / np.linalg.norm(quat)
            mb.set_q(s, q)
            mb.set_u(s, rng.uniform(-1, 1, mb.get_num_u(s)))
        self.system.realize(s, Stage.Acceleration)
        self.nu = s.get_nu()
        self.q, self.u = np.array(s.get_q()), np.array(s.get_u())
        self.udot = rng.uniform(-1, 1, self.nu)
        self.f = np.zeros(self.nu)
        self.F = np.array(self.system.get_rigid_body_forces(s))  # gravity, as body forces
        if pin is not None:
            self.model = build_pinocchio(bodies)
            self.data = self.model.createData()
            self.q_pin, self.v_pin, self.T, self.Tdot_v = pinocchio_state(bodies, self.mobods, s)
            self.tau_pin = np.zeros(self.nu)
            self.a_pin = np.linalg.solve(self.T, self.udot - self.Tdot_v)

    def check_agreement(self) -> float:
        """Largest relative difference of udot, M and ID between the two libraries."""
        s, T = self.state, self.T
        vdot = pin.aba(self.model, self.data, self.q_pin, self.v_pin, self.tau_pin)
        M_pin = pin.crba(self.model, self.data, self.q_pin)
        M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T
        tau = pin.rnea(self.model, self.data, self.q_pin, self.v_pin, self.a_pin)
        res = self.matter.calc_residual_force_ignoring_constraints(s, self.f, self.F, self.udot)

        def rel(a, b):
            return np.abs(a - b).max() / max(1.0, np.abs(b).max())
        return max(rel(np.array(s.get_udot()), T @ vdot + self.Tdot_v),
                   rel(T.T @ self.matter.calc_m(s) @ T, M_pin), rel(T.T @ res, tau))

    # simtk operations
    def fd(self):
        self.state.set_u(self.u)
        self.system.realize(self.state, Stage.Acceleration)

    def fd_q(self):
        self.state.set_q(self.q)
        self.system.realize(self.state, Stage.Acceleration)

    def crba(self):
        return self.matter.calc_m(self.state)

    def crba_q(self):
        self.state.set_q(self.q)
        self.system.realize(self.state, Stage.Position)
        return self.matter.calc_m(self.state)

    def rnea(self):
        return self.matter.calc_residual_force_ignoring_constraints(self.state, self.f, self.F, self.udot)

    def rnea_q(self):
        self.state.set_q(self.q)
        self.system.realize(self.state, Stage.Velocity)
        return self.matter.calc_residual_force_ignoring_constraints(self.state, self.f, self.F, self.udot)

    # peer operations
    def pin_aba(self):
        return pin.aba(self.model, self.data, self.q_pin, self.v_pin, self.tau_pin)

    def pin_crba(self):
        return pin.crba(self.model, self.data, self.q_pin)

    def pin_rnea(self):
        return pin.rnea(self.model, self.data, self.q_pin, self.v_pin, self.a_pin)

    def time_all(self) -> dict:
        self.fd()  # leaves the state realized to Acceleration for calc_m / the residual
        t = {"FD": best_us(self.fd), "FD(q)": best_us(self.fd_q)}
        self.fd()
        t["M"] = best_us(self.crba)
        t["ID"] = best_us(self.rnea)
        t["M(q)"] = best_us(self.crba_q)
        t["ID(q)"] = best_us(self.rnea_q)
        if pin is not None:
            t["aba"], t["crba"], t["rnea"] = best_us(self.pin_aba), best_us(self.pin_crba), best_us(self.pin_rnea)
        return t


def cases(quick: bool):
    rng = np.random.default_rng(2024)
    sizes = (7, 30, 100) if quick else (7, 30, 100, 300)
    out = [Case(f"chain {n} Pin", random_bodies(rng, n, ["Pin"], chain=True), rng) for n in sizes]
    out.append(Case("tree 40 mixed", random_bodies(rng, 40, ["Pin", "Slider", "Ball", "Free"], chain=False), rng))
    return out


def profile(case: Case, n_calls: int = 20000) -> str:
    """cProfile of the FD, M and ID loops of one case; the top entries by own time."""
    out = io.StringIO()
    for label, fn in (("FD: set_u + realize(Acceleration)", case.fd),
                      ("FD(q): set_q + realize(Acceleration)", case.fd_q), ("M: calc_m", case.crba),
                      ("ID: calc_residual_force_ignoring_constraints", case.rnea)):
        case.fd()
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(n_calls):
            fn()
        prof.disable()
        out.write(f"\n--- {label}, {n_calls} calls ---\n")
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(12)
    return out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", action="store_true", help="cProfile the 7-body chain")
    parser.add_argument("--quick", action="store_true", help="skip the 300-body chain")
    args = parser.parse_args()
    print(f"Python {platform.python_version()}, numpy {np.__version__}, "
          f"pinocchio {pin.__version__ if pin is not None else 'not installed (peer columns skipped)'}")
    rows = []
    for case in cases(args.quick):
        if pin is not None:
            err = case.check_agreement()
            assert err < 1e-9, f"{case.name}: simtk and Pinocchio disagree ({err:.1e})"
        rows.append((case, case.time_all()))
    print("microseconds per call, best of 7 timeit repeats; (ratio) = simtk / pinocchio")
    groups = (("FD", "FD(q)", "aba"), ("M", "M(q)", "crba"), ("ID", "ID(q)", "rnea"))
    header = f"{'model':>14} {'nu':>4}" + "".join(
        f" | {a:>6} {'':>6} {b:>6} {'':>6} {peer:>6}" for a, b, peer in groups)
    print(header)
    print("-" * len(header))

    def ratio(x, peer):
        return f"({x / peer:4.2f})" if peer else f"{'':>6}"
    for case, t in rows:
        line = f"{case.name:>14} {case.nu:>4}"
        for a, b, peer in groups:
            p = t.get(peer)
            line += (f" | {t[a]:6.1f} {ratio(t[a], p)} {t[b]:6.1f} {ratio(t[b], p)} "
                     f"{p if p is not None else '-':>6.6}" if p is None else
                     f" | {t[a]:6.1f} {ratio(t[a], p)} {t[b]:6.1f} {ratio(t[b], p)} {p:6.1f}")
        print(line)
    chains = [(c, t) for c, t in rows if c.name.startswith("chain")]
    if len(chains) >= 2:
        (c0, t0), (c1, t1) = chains[-2], chains[-1]
        print(f"FD(q) growth from {c0.nu} to {c1.nu} mobilities: x{t1['FD(q)'] / t0['FD(q)']:.2f} "
              f"(linear would be x{c1.nu / c0.nu:.2f})")
    if args.profile:
        print(profile(rows[0][0]))


if __name__ == "__main__":
    main()
