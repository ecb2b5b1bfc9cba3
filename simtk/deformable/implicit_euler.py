"""Linearly implicit Euler for rigid and deformable bodies together (SOFA's EulerImplicit / CGImplicit).

One step of size h from (q0, u0), with f the generalized forces and, for the deformable bodies'
elements, K = -df/dx and D = -df/dv (analytic, from the element kernels)::

    (M + h D + h^2 K) du = h M udot0 - h^2 K u0      (one linear solve: Baraff and Witkin's step)
    u1 = u0 + du,   q1 = q0 + h qdot(q0, u1),   z1 = z0 + h zdot0

where udot0 is the explicit acceleration at the step's start (everything the State computes: the
rigid bodies' forces, the particles' forces, gravity, loads), so terms the step does not linearize
(Coriolis, the rigid bodies' own force elements) are explicit. M is the rigid tree's mass matrix,
used only through its O(n) products (M a and M^-1 v, the kernels), beside the particles' masses;
K and D act on the particles' displacements, which the rigid bodies move through the attached
stations' Jacobian J (so J^T K J in the rigid block). The system is solved by conjugate gradients
preconditioned by blockdiag(M^-1, each body's incomplete Cholesky IC(0) of its free particles' block,
assembled and factored at the step's start by compiled kernels; see _ic.py), in buffers made once per
interval (no array is allocated per step or per CG iteration). Elements are linearized at the
step's start, so this is first-order accurate. A compressed spring's transverse stiffness is
negative; it is left out of K (Choi and Ko), which keeps M + h D + h^2 K positive definite at any
step (the rhs keeps the exact forces, so the step stays first-order).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._core_implicit import station_jacobian_into
from ..common.stage import POSITION
from ..math.integrator import Integrator, IntegratorError
from ._ic import ParticlePreconditioner
from .body import DeformableBody

__all__ = ["ImplicitEulerIntegrator"]


class ImplicitEulerIntegrator(Integrator):
    """Fixed-step linearly implicit Euler (first order, stable for stiff elements); no error control.

    Parameters
    ----------
    system : MultibodySystem
        A System with deformable bodies (and rigid bodies, without constraints).
    step : float
        The step size (shortened only to land on report, event and final times).
    cg_tolerance : float
        Relative residual at which conjugate gradients stop (on ||r|| / ||rhs||).
    cg_max_iterations : int
        A step whose solve does not converge within this many iterations raises.
    """

    _method_name = "ImplicitEuler"
    _has_error_control = False
    _order = 1
    _error_order = 1
    _num_stages = 1
    # "ic0", or "mass" for the former blockdiag(M^-1, 1 / m) (kept for benchmarks/deformable.py's comparison)
    _preconditioner = "ic0"

    def __init__(self, system: Any, step: float, cg_tolerance: float = 1e-10, cg_max_iterations: int = 1000):
        super().__init__(system)
        self.set_fixed_step_size(step)
        if not (isinstance(cg_tolerance, (int, float)) and 0.0 < cg_tolerance < 1.0):
            raise ValueError(f"ImplicitEulerIntegrator: cg_tolerance must be in (0, 1), got {cg_tolerance!r}")
        if not (isinstance(cg_max_iterations, int) and cg_max_iterations >= 1):
            raise ValueError(f"ImplicitEulerIntegrator: cg_max_iterations must be a positive int, got "
                             f"{cg_max_iterations!r}")
        self._cg_tol = float(cg_tolerance)
        self._cg_max = cg_max_iterations
        self._cg_iterations = 0

    def set_fixed_step_size(self, h: float) -> None:
        if h is None:
            raise IntegratorError("ImplicitEulerIntegrator has no error control: it needs a fixed step size")
        super().set_fixed_step_size(h)

    def get_num_cg_iterations(self) -> int:
        """Conjugate-gradient iterations taken so far (all steps)."""
        return self._cg_iterations

    # ------------------------------------------------------------------ layout (once per interval)
    def _allocate_method(self, ny: int) -> None:
        s = self._adv
        system = self._system
        if s.get_nq_err() + s.get_nu_err() + s.get_nudot_err() > 0:
            raise IntegratorError("ImplicitEulerIntegrator: the System has constraints, which this step does not "
                                  "solve yet; use an explicit integrator")
        self._nq, self._nu = s.get_nq(), s.get_nu()
        matter = system.get_matter_subsystem()
        self._matter = matter
        self._mu0 = matter.get_u_start(s)
        self._nmu = matter.get_num_mobilities(s)
        self._bodies = [b for b in system._subsystems if isinstance(b, DeformableBody)]
        nu = self._nu
        # every buffer of the step, made once here (the products write through views made per call: a view kept
        # here would be a copy of its own in a pickled integrator)
        self._cg = {k: np.zeros(nu) for k in ("x", "r", "z", "p", "Ap", "rhs", "tmp", "w")}
        self._rig = slice(self._mu0, self._mu0 + self._nmu)
        self._rig_jtf = np.zeros(self._nmu)
        parts = []
        for b in self._bodies:
            n = b.get_num_particles()
            free, att = b._free, b._att_index
            u = slice(b.get_u_start(s), b.get_u_start(s) + 3 * len(free))
            # free rows that are one run of particles (fixed and attached ones at the ends, as a clamped face
            # often is) go through a slice: a fancy-indexed copy of the rows costs more than the copy itself
            run = len(free) and free[-1] - free[0] + 1 == len(free)
            parts.append(dict(
                body=b, u=u, free=free, att=att, rows=slice(int(free[0]), int(free[-1]) + 1) if run else free,
                att_bodies=np.array([m.get_mobilized_body_index() for m in b._att_bodies], dtype=np.int64),
                att_st=np.ascontiguousarray(np.reshape(b._att_stations, (-1, 3)), dtype=np.float64),
                J=np.zeros((3 * len(att), self._matter.get_num_mobilities(s))),
                x=np.zeros((n, 3)), dx=np.zeros((n, 3)), out=np.zeros((n, 3)),
                f_free=np.zeros((len(free), 3)), f_att=np.zeros((len(att), 3)), jv=np.zeros(3 * len(att)),
                minv=1.0 / np.repeat(b._mass[free], 3), m=np.repeat(b._mass[free], 3),
                pc=(ParticlePreconditioner(b) if len(free) and b._element_sets and self._preconditioner == "ic0"
                    else None)))
        self._parts = parts
        self._J: list = [None] * len(parts)

    # ------------------------------------------------------------------ operators (at the step's start)
    def _particles_of(self, part: dict, v: np.ndarray, into: np.ndarray, J: np.ndarray | None) -> None:
        """The particles' motion (n, 3) for generalized speeds v: free rows from v, attached rows
        J v (the matter's part), fixed rows zero (``into`` is part["dx"], whose fixed rows stay zero)."""
        into[part["rows"]] = v[part["u"]].reshape(-1, 3)
        if J is not None:
            np.dot(J, v[self._rig], out=part["jv"])
            into[part["att"]] = part["jv"].reshape(-1, 3)

    def _add_back(self, part: dict, f: np.ndarray, out: np.ndarray, J: np.ndarray | None) -> None:
        """out += the generalized forces of particle forces f (n, 3): free rows to theirs, attached
        rows to the matter's through J^T (fixed rows are held)."""
        rows = part["rows"]
        if isinstance(rows, slice):
            out[part["u"]] += f[rows].reshape(-1)
        else:  # (mode "clip": the indices are in range, and "raise" would buffer the output)
            np.take(f, rows, axis=0, out=part["f_free"], mode="clip")
            out[part["u"]] += part["f_free"].reshape(-1)
        if J is not None:
            np.take(f, part["att"], axis=0, out=part["f_att"], mode="clip")
            np.dot(part["f_att"].reshape(-1), J, out=self._rig_jtf)
            out[self._rig] += self._rig_jtf

    def _add_elements(self, v: np.ndarray, out: np.ndarray, alpha: float, beta: float) -> None:
        """out += (alpha K + beta D) v over every body's elements (K and D at the step's start)."""
        for part, J in zip(self._parts, self._J):
            self._particles_of(part, v, part["dx"], J)
            part["out"][:] = 0.0
            part["body"]._add_element_derivative_product(part["x"], part["dx"], part["dx"], alpha, beta, part["out"])
            self._add_back(part, part["out"], out, J)

    def _apply_A(self, v: np.ndarray, out: np.ndarray, h: float) -> None:
        """out = (M + h D + h^2 K) v."""
        out[:] = 0.0
        if self._nmu:
            self._matter.multiply_by_m(self._adv, v[self._rig], out=out[self._rig])
        for part in self._parts:
            u = part["u"]
            np.multiply(part["m"], v[u], out=out[u])
        if h != 0.0:
            self._add_elements(v, out, h * h, h)

    def _precondition(self, r: np.ndarray, z: np.ndarray) -> None:
        """z = P^-1 r, P = blockdiag(M, each body's IC(0) of its free particles' block)."""
        z[:] = r
        if self._nmu:
            self._matter.multiply_by_m_inv(self._adv, r[self._rig], out=z[self._rig])
        for part in self._parts:
            rp, zp = r[part["u"]], z[part["u"]]
            if part["pc"] is not None:
                part["pc"].solve(rp, zp)
            else:
                np.multiply(rp, part["minv"], out=zp)

    # ------------------------------------------------------------------ the step
    def _attempt_step(self, t1: float) -> bool:
        s = self._adv
        h = t1 - self._t0
        nq, nu = self._nq, self._nu
        y0, f0 = self._y0, self._f0
        cg = self._cg
        # the start State is realized to Acceleration: operators at (q0, u0)
        for k, part in enumerate(self._parts):
            part["x"][:] = part["body"].get_positions(s)
            if len(part["att"]):  # into its preallocated rows: the step allocates nothing
                station_jacobian_into(self._matter._ws_at(s, POSITION, "ImplicitEulerIntegrator"), part["att_bodies"],
                                      part["att_st"], part["J"])
                self._J[k] = part["J"]
            else:
                self._J[k] = None
            if part["pc"] is not None and not part["pc"].update(part["x"], h):
                return False  # no factor: the start positions are not finite
        u0 = y0[nq:nq + nu]
        udot0 = f0[nq:nq + nu]
        rhs, tmp = cg["rhs"], cg["tmp"]
        # rhs = h M udot0 - h^2 K u0
        self._apply_A(udot0, rhs, 0.0)  # M udot0
        rhs *= h
        tmp[:] = 0.0
        self._add_elements(u0, tmp, h * h, 0.0)
        rhs -= tmp
        du = self._solve(h)
        if du is None:
            return False
        # u1 = u0 + du, z1 = z0 + h zdot0; then q1 = q0 + h qdot(q0, u1)
        y = self._set_ty(t1)
        y[:nq] = y0[:nq]
        np.add(u0, du, out=y[nq:nq + nu])
        np.multiply(f0[nq + nu:], h, out=y[nq + nu:])
        y[nq + nu:] += y0[nq + nu:]
        qdot = self._realize_velocity()
        y = self._adv.upd_y()
        np.multiply(qdot, h, out=y[:nq])
        y[:nq] += y0[:nq]
        return True

    def _solve(self, h: float) -> np.ndarray | None:
        """Preconditioned conjugate gradients on (M + h D + h^2 K) x = rhs, from x = 0."""
        cg = self._cg
        x, r, z, p, Ap, rhs, w = cg["x"], cg["r"], cg["z"], cg["p"], cg["Ap"], cg["rhs"], cg["w"]
        x[:] = 0.0
        r[:] = rhs
        norm_b = math.sqrt(float(rhs @ rhs))
        if norm_b == 0.0:
            return x
        if not math.isfinite(norm_b):
            return None
        self._precondition(r, z)
        p[:] = z
        rz = float(r @ z)
        for it in range(1, self._cg_max + 1):
            self._apply_A(p, Ap, h)
            pAp = float(p @ Ap)
            if not pAp > 0.0:
                raise IntegratorError(f"ImplicitEulerIntegrator: the step's matrix is not positive definite at "
                                      f"t = {self._t0!r} (p.Ap = {pAp!r})")
            alpha = rz / pAp
            np.multiply(p, alpha, out=w)
            x += w
            np.multiply(Ap, alpha, out=w)
            r -= w
            if math.sqrt(float(r @ r)) <= self._cg_tol * norm_b:
                self._cg_iterations += it
                return x
            self._precondition(r, z)
            rz_new = float(r @ z)
            p *= rz_new / rz
            p += z
            rz = rz_new
        raise IntegratorError(f"ImplicitEulerIntegrator: conjugate gradients did not reach {self._cg_tol!r} in "
                              f"{self._cg_max} iterations at t = {self._t0!r}")
