"""Time the compiled multibody kernels against Pinocchio on chains of Pin joints.

Run: ``python benchmarks/kernels_vs_pinocchio.py`` (needs ``pinocchio``).

Our forward dynamics is reported two ways: the full evaluation from (q, u)
(realize_position + realize_velocity + forward_dynamics, the latter rebuilding
the q-only articulated inertias, which is what ``pinocchio.aba`` does) and the
acceleration sweep alone (q-only and u-only parts cached, as when only the
forces change). The columns in parentheses split the full time into position
kinematics, articulated inertias (abi), velocity stage and acceleration sweep. CRBA and RNEA are
likewise timed from q (and u) to the result, and kernel-only. All numbers are
the best of several timeit repeats, in microseconds per call, in one process.
The workspace methods are called directly (the matter subsystem's hot path);
the checked wrappers in simtk._core add a few microseconds of validation.
"""
from __future__ import annotations

import sys
import timeit

import numpy as np

from simtk import _core

try:
    import pinocchio as pin
except ImportError:  # pragma: no cover
    sys.exit("pinocchio is not installed; nothing to compare against")


def chain(n: int, rng: np.random.Generator):
    """n Pin bodies in a chain, links 0.3 m along x, axis z tilted per body."""
    nb = n + 1
    parent = np.arange(-1, n)
    R_PF = np.tile(np.eye(3), (nb, 1, 1))
    for i in range(1, nb):
        a = rng.uniform(-0.5, 0.5)
        R_PF[i] = np.array([[1, 0, 0], [0, np.cos(a), -np.sin(a)], [0, np.sin(a), np.cos(a)]])
    p_PF = np.zeros((nb, 3))
    p_PF[2:, 0] = 0.3
    R_BM = np.tile(np.eye(3), (nb, 1, 1))
    p_BM = np.zeros((nb, 3))
    mass = np.r_[0.0, rng.uniform(0.5, 2.0, size=n)]
    p_BC = np.zeros((nb, 3))
    p_BC[1:, 0] = 0.15
    I_B = np.zeros((nb, 3, 3))
    for i in range(1, nb):
        I_C = np.diag(rng.uniform(0.01, 0.05, size=3))
        c = p_BC[i]
        I_B[i] = I_C + mass[i] * (c @ c * np.eye(3) - np.outer(c, c))
    ws = _core.make_tree_kernels(parent, ["Weld"] + ["Pin"] * n, R_PF=R_PF, p_PF=p_PF,
                                 R_BM=R_BM, p_BM=p_BM, mass=mass, p_BC=p_BC, I_B=I_B)
    model = pin.Model()
    model.gravity = pin.Motion.Zero()
    for i in range(1, nb):
        jid = model.addJoint(i - 1, pin.JointModelRZ(), pin.SE3(R_PF[i], p_PF[i]), f"j{i}")
        I_C = I_B[i] - mass[i] * (p_BC[i] @ p_BC[i] * np.eye(3) - np.outer(p_BC[i], p_BC[i]))
        model.appendBodyToJoint(jid, pin.Inertia(mass[i], p_BC[i], I_C), pin.SE3.Identity())
    return ws, model


def best(stmt, number: int, repeat: int = 7) -> float:
    return min(timeit.repeat(stmt, number=number, repeat=repeat)) / number * 1e6


def main() -> None:
    rng = np.random.default_rng(0)
    rows = []
    for n in (7, 30, 100, 300):
        ws, model = chain(n, rng)
        data = model.createData()
        q = rng.uniform(-1, 1, n)
        v = rng.uniform(-1, 1, n)
        tau = rng.uniform(-1, 1, n)
        a = rng.uniform(-1, 1, n)
        F = np.zeros((n + 1, 2, 3))
        M = np.zeros((n, n))
        out = np.zeros(n)
        number = max(200, 200000 // (n * 10))

        # correctness guard: the two libraries agree on this model
        ws.realize_position(q)
        ws.realize_velocity(v)
        ws.forward_dynamics(tau, F)
        assert np.allclose(ws.udot, pin.aba(model, data, q, v, tau), rtol=1e-9, atol=1e-9)

        def ours_fd():
            ws.realize_position(q)
            ws.realize_velocity(v)
            ws.forward_dynamics(tau, F)

        def ours_crba():
            ws.realize_position(q)
            ws.mass_matrix(M)

        def ours_rnea():
            ws.realize_position(q)
            ws.realize_velocity(v)
            ws.inverse_dynamics(a, out, F, out)

        t = {
            "fd": best(ours_fd, number),
            "fd_acc": best(lambda: ws.forward_dynamics(tau, F), number),
            "pos": best(lambda: ws.realize_position(q), number),
            "vel": best(lambda: ws.realize_velocity(v), number),
            "abi": best(ws.realize_articulated, number),
            "aba": best(lambda: pin.aba(model, data, q, v, tau), number),
            "crba": best(ours_crba, number),
            "crba_k": best(lambda: ws.mass_matrix(M), number),
            "pcrba": best(lambda: pin.crba(model, data, q), number),
            "rnea": best(ours_rnea, number),
            "rnea_k": best(lambda: ws.inverse_dynamics(a, tau, F, out), number),
            "prnea": best(lambda: pin.rnea(model, data, q, v, a), number),
        }
        rows.append((n, t))

    print("times in microseconds per call (best of 7); ratio = ours / pinocchio")
    print(f"{'n':>4} | {'FD full':>8} {'(pos':>7} {'abi':>6} {'vel':>6} {'acc)':>6} {'pin.aba':>8} {'ratio':>6} "
          f"{'acc/aba':>7} | {'CRBA':>7} {'(M only)':>8} {'pin.crba':>8} {'ratio':>6} | "
          f"{'RNEA':>7} {'(kernel)':>8} {'pin.rnea':>8} {'ratio':>6}")
    for n, t in rows:
        print(f"{n:>4} | {t['fd']:8.2f} {t['pos']:7.2f} {t['abi']:6.2f} {t['vel']:6.2f} {t['fd_acc']:6.2f} "
              f"{t['aba']:8.2f} {t['fd'] / t['aba']:6.2f} {t['fd_acc'] / t['aba']:7.2f} | "
              f"{t['crba']:7.2f} {t['crba_k']:8.2f} {t['pcrba']:8.2f} {t['crba'] / t['pcrba']:6.2f} | "
              f"{t['rnea']:7.2f} {t['rnea_k']:8.2f} {t['prnea']:8.2f} {t['rnea'] / t['prnea']:6.2f}")


if __name__ == "__main__":
    main()
