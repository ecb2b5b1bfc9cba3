"""MobilizedBody.Custom: a mobilizer whose kinematics are written in Python (seed §3.5).

The user subclasses ``MobilizedBody.Custom.Implementation`` and overrides the transform, H, H^T,
HDot and HDot^T (and N, N^-1, NDot when qdot is not u). The compiled sweeps treat a Custom body
like any other: before each sweep, this module runs the user's code ONCE per body and writes that
body's rows of the kernel workspace (``simtk._core`` docstring):

=============  ====================================================================
Position       X_FM = calc_mobilizer_transform_from_q(q); H_FM column j = H e_j
               (nu calls of multiply_by_h_matrix)
Velocity       qdot = N u; then HDot_FM u = multiply_by_h_dot_matrix(u), which may read qdot
Acceleration   qdotdot = N udot + NDot u (after forward dynamics)
=============  ====================================================================

While those hooks run the matter subsystem is below the stage being realized, so the helpers an
implementation uses to read its own variables (``get_q``, ``get_u``, ``get_mobilizer_transform``,
...) read the State's arrays directly, without stage checks: they are valid from inside the
methods above, and anywhere once the State is realized far enough.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ... import _core
from ..._real import real_array
from ...common._ownership import check_system
from ...spatial import Rotation, Transform
from ._matter_tree import MatterTree
from .mobilized_body import MobilizedBody

if TYPE_CHECKING:
    from ...common.state import State
    from ..matter import SimbodyMatterSubsystem

__all__ = ["CustomImplementation", "Custom"]

_all_finite = _core._k.all_finite
_HOOKS = ("topology", "model", "instance", "time", "position", "velocity", "dynamics", "acceleration", "report")


def _count(x, what: str, lo: int, hi: int | None = None) -> int:
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
        raise TypeError(f"MobilizedBody.Custom.Implementation: {what} must be an int, got {x!r}")
    n = int(x)
    if n < lo or (hi is not None and n > hi):
        bound = f"from {lo} to {hi}" if hi is not None else f">= {lo}"
        raise ValueError(f"MobilizedBody.Custom.Implementation: {what} = {n} must be {bound}")
    return n


def rotation_vector(R: np.ndarray) -> np.ndarray:
    """The rotation vector (axis * angle, (3,)) of a rotation matrix, robust near 0 and pi."""
    c = 0.5 * (np.trace(R) - 1.0)
    c = min(1.0, max(-1.0, c))
    w = 0.5 * np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    s = np.linalg.norm(w)
    angle = np.arctan2(s, c)
    if s > 1e-7:
        return w * (angle / s)
    if c > 0:  # near identity: R - R^T = 2 [w x] to second order
        return w
    # near pi: the axis is the dominant column of R + 1
    B = R + np.eye(3)
    k = int(np.argmax(np.diag(B)))
    axis = B[:, k] / np.linalg.norm(B[:, k])
    return axis * angle


class CustomImplementation:
    """Base for the implementation of a ``MobilizedBody.Custom`` (Simbody's ``Custom::Implementation``).

    Parameters
    ----------
    matter : SimbodyMatterSubsystem
        The matter subsystem the body will join.
    nu : int
        Number of generalized speeds, 0 to 6.
    nq : int
        Number of generalized coordinates (>= 0). When ``nq != nu``, ``multiply_by_n_matrix`` and
        ``multiply_by_n_inv_matrix`` must be overridden.
    n_angles : int
        How many of the q are rotation angles (0 to nq); kept for the user's information, as in
        Simbody.

    Notes
    -----
    Override (each receives the State; read this body's variables with the helpers below):

    * ``calc_mobilizer_transform_from_q(state, q) -> Transform`` (X_FM for coordinates q (nq,));
    * ``multiply_by_h_matrix(state, u) -> (2, 3)``: V_FM = H u, (angular, velocity of M's origin), in F;
    * ``multiply_by_h_transpose(state, F) -> (nu,)`` for a spatial force F (2, 3) in F;
    * ``multiply_by_h_dot_matrix(state, u) -> (2, 3)`` and ``multiply_by_h_dot_transpose(state, F)``;
      HDot is the time derivative of H taken in F;
    * optionally ``multiply_by_n_matrix(state, transpose, v)`` (qdot = N u; N is nq x nu),
      ``multiply_by_n_inv_matrix(state, transpose, v)`` and ``multiply_by_n_dot_matrix(state,
      transpose, v)``; the defaults are N = identity and NDot = 0 (they need nq == nu);
    * optionally ``set_q_to_fit_transform(state, X_FM, q)`` and ``set_u_to_fit_velocity(state,
      V_FM, u)``, which fill ``q`` (nq,) / ``u`` (nu,) in place; the defaults fit numerically;
    * optionally ``get_default_q()`` (default zeros) and the stage hooks ``realize_topology(state)``,
      ``realize_model``, ``realize_instance``, ``realize_position`` (runs before the transform is
      computed), ``realize_velocity`` (after qdot = N u, before HDot u) and ``realize_acceleration``
      (after qdotdot).
      ``realize_topology`` and ``realize_model`` both run while the matter subsystem realizes Model
      (allocate discrete variables and cache entries there, through ``get_matter_subsystem()``;
      such variables invalidate Instance or a later stage).
    """

    def __init__(self, matter: "SimbodyMatterSubsystem", nu: int, nq: int, n_angles: int = 0):
        if not isinstance(matter, MatterTree):
            raise TypeError("MobilizedBody.Custom.Implementation: the first argument must be the "
                            f"SimbodyMatterSubsystem, got {type(matter).__name__}")
        self._matter = matter
        self._nu = _count(nu, "nu", 0, 6)
        self._nq = _count(nq, "nq", 0)
        self._n_angles = _count(n_angles, "n_angles", 0, self._nq)
        self._mobod: "Custom | None" = None

    # ------------------------------------------------------------------ what the user overrides
    def calc_mobilizer_transform_from_q(self, state: "State", q: np.ndarray) -> Transform:
        """X_FM for the coordinates ``q`` (nq,)."""
        raise NotImplementedError(f"{type(self).__name__} must override calc_mobilizer_transform_from_q()")

    def multiply_by_h_matrix(self, state: "State", u: np.ndarray) -> np.ndarray:
        """H u: the spatial velocity V_FM (2, 3) in F for speeds ``u`` (nu,)."""
        raise NotImplementedError(f"{type(self).__name__} must override multiply_by_h_matrix()")

    def multiply_by_h_transpose(self, state: "State", F: np.ndarray) -> np.ndarray:
        """H^T F (nu,) for a spatial force F (2, 3) in F."""
        raise NotImplementedError(f"{type(self).__name__} must override multiply_by_h_transpose()")

    def multiply_by_h_dot_matrix(self, state: "State", u: np.ndarray) -> np.ndarray:
        """HDot u (2, 3), HDot the time derivative of H in F."""
        raise NotImplementedError(f"{type(self).__name__} must override multiply_by_h_dot_matrix()")

    def multiply_by_h_dot_transpose(self, state: "State", F: np.ndarray) -> np.ndarray:
        """HDot^T F (nu,)."""
        raise NotImplementedError(f"{type(self).__name__} must override multiply_by_h_dot_transpose()")

    def multiply_by_n_matrix(self, state: "State", transpose: bool, v: np.ndarray) -> np.ndarray:
        """N v (nq,) for v (nu,), or N^T v (nu,) for v (nq,). Default: N = identity."""
        self._need_square("multiply_by_n_matrix")
        return np.array(v, dtype=np.float64)

    def multiply_by_n_inv_matrix(self, state: "State", transpose: bool, v: np.ndarray) -> np.ndarray:
        """N^-1 v (nu,) for v (nq,), or N^-T v (nq,) for v (nu,). Default: identity."""
        self._need_square("multiply_by_n_inv_matrix")
        return np.array(v, dtype=np.float64)

    def multiply_by_n_dot_matrix(self, state: "State", transpose: bool, v: np.ndarray) -> np.ndarray:
        """NDot v (nq,) for v (nu,), or NDot^T v. Default: 0."""
        self._need_square("multiply_by_n_dot_matrix")
        return np.zeros(len(v))

    def set_q_to_fit_transform(self, state: "State", X_FM: Transform, q: np.ndarray) -> None:
        """Fill ``q`` (nq,), which holds the current q, with the coordinates whose X_FM is closest.

        The default minimizes |rotation vector of R_target^T R(q)|^2 + |p(q) - p_target|^2 by
        least squares, starting from the current q.
        """
        from scipy.optimize import least_squares

        R_t, p_t = X_FM.R.matrix, np.asarray(X_FM.p)

        def residual(x):
            X = self.calc_mobilizer_transform_from_q(state, x)
            return np.concatenate([rotation_vector(R_t.T @ X.R.matrix), np.asarray(X.p) - p_t])

        if self._nq:
            sol = least_squares(residual, np.array(q, dtype=np.float64), xtol=1e-15, ftol=1e-15, gtol=1e-15)
            q[:] = sol.x

    def set_u_to_fit_velocity(self, state: "State", V_FM: np.ndarray, u: np.ndarray) -> None:
        """Fill ``u`` (nu,) with the speeds whose H u is closest (least squares) to ``V_FM`` (2, 3)."""
        if self._nu:
            H = self.calc_h_columns(state).reshape(self._nu, 6).T
            u[:] = np.linalg.lstsq(H, np.asarray(V_FM, dtype=np.float64).reshape(6), rcond=None)[0]

    def get_default_q(self) -> np.ndarray:
        """The q a new State starts with (default zeros (nq,))."""
        return np.zeros(self._nq)

    def realize_topology(self, state: "State") -> None:
        """Allocate this mobilizer's own variables (runs while the matter subsystem realizes Topology)."""

    def realize_model(self, state: "State") -> None:
        """Model-stage work (runs while the matter subsystem realizes Model, before its layout)."""

    def realize_instance(self, state: "State") -> None:
        """Instance-stage work."""

    def realize_time(self, state: "State") -> None:
        """Time-stage work."""

    def realize_dynamics(self, state: "State") -> None:
        """Dynamics-stage work."""

    def realize_report(self, state: "State") -> None:
        """Report-stage work."""

    def realize_position(self, state: "State") -> None:
        """Position-stage work, before the transform and H are computed."""

    def realize_velocity(self, state: "State") -> None:
        """Velocity-stage work, after qdot = N u and before HDot u are computed."""

    def realize_acceleration(self, state: "State") -> None:
        """Acceleration-stage work, after qdotdot is computed."""

    # ------------------------------------------------------------------ helpers for the user
    def get_matter_subsystem(self) -> "SimbodyMatterSubsystem":
        """The matter subsystem given to the constructor."""
        return self._matter

    def get_mobilized_body(self) -> "Custom":
        """The MobilizedBody.Custom that uses this implementation."""
        if self._mobod is None:
            raise RuntimeError(f"{type(self).__name__} is not attached to a MobilizedBody.Custom yet")
        return self._mobod

    def get_num_u(self) -> int:
        """nu given to the constructor."""
        return self._nu

    def get_num_q(self) -> int:
        """nq given to the constructor."""
        return self._nq

    def get_num_angles(self) -> int:
        """How many q are angles."""
        return self._n_angles

    def get_q(self, state: "State") -> np.ndarray:
        """This body's q (nq,), read-only (valid from Model on, also inside the realization hooks)."""
        return self.get_mobilized_body()._raw_q(state)

    def get_u(self, state: "State") -> np.ndarray:
        """This body's u (nu,), read-only."""
        return self.get_mobilized_body()._raw_u(state)

    def get_qdot(self, state: "State") -> np.ndarray:
        """This body's qdot (nq,): current from the Velocity stage on, including inside
        ``realize_velocity`` and ``multiply_by_h_dot_matrix`` (qdot = N u is filled before them)."""
        mb = self.get_mobilized_body()
        ws = mb._ws(state)
        q0 = int(ws.qoff[mb._index])
        return ws.qdot[q0:q0 + self._nq].copy()

    def get_udot(self, state: "State") -> np.ndarray:
        """This body's udot (nu,) (valid after forward dynamics)."""
        mb = self.get_mobilized_body()
        ws = mb._ws(state)
        u0 = int(ws.uoff[mb._index])
        return ws.udot[u0:u0 + self._nu].copy()

    def get_mobilizer_transform(self, state: "State") -> Transform:
        """X_FM of the current q (valid once Position has computed it, also inside H methods)."""
        mb = self.get_mobilized_body()
        ws = mb._ws(state)
        i = mb._index
        return Transform._trusted(Rotation._trusted(ws.R_FM[i].copy()), ws.p_FM[i].copy())

    def get_mobilizer_velocity(self, state: "State") -> np.ndarray:
        """V_FM = H u (2, 3) in F (valid once Position has computed H)."""
        mb = self.get_mobilized_body()
        ws = mb._ws(state)
        u0 = int(ws.uoff[mb._index])
        H = ws.H_FM[u0:u0 + self._nu]
        return np.tensordot(self.get_u(state), H, axes=(0, 0)) if self._nu else np.zeros((2, 3))

    def calc_h_columns(self, state: "State") -> np.ndarray:
        """The columns of H, (nu, 2, 3), by nu calls of ``multiply_by_h_matrix`` at the current q."""
        H = np.zeros((self._nu, 2, 3))
        e = np.zeros(self._nu)
        for j in range(self._nu):
            e[j] = 1.0
            H[j] = self.multiply_by_h_matrix(state, e)
            e[j] = 0.0
        return H

    # ------------------------------------------------------------------ internal
    def _need_square(self, what: str) -> None:
        if self._nq != self._nu:
            raise NotImplementedError(
                f"{type(self).__name__}: nq = {self._nq} != nu = {self._nu}, so qdot = u cannot hold: "
                f"override {what}() (and the other N methods)")

    def _overrides(self, name: str) -> bool:
        return getattr(type(self), name) is not getattr(CustomImplementation, name)


class Custom(MobilizedBody):
    """A mobilized body whose mobilizer is a user's ``MobilizedBody.Custom.Implementation`` (seed §3.5).

    Call as ``MobilizedBody.Custom(parent, X_PF, body, X_BM, implementation)`` or
    ``MobilizedBody.Custom(parent, body, implementation)`` (identity frames).

    Parameters
    ----------
    parent : MobilizedBody
        The inboard body.
    X_PF, X_BM : Transform
        The F frame on the parent and the M frame on this body.
    body : Body
        Mass properties.
    implementation : MobilizedBody.Custom.Implementation
        The kinematics; one implementation object serves one body.
    """

    _joint = "Custom"
    Implementation = CustomImplementation

    def __init__(self, parent: MobilizedBody, *args, direction: str = MobilizedBody.Forward):
        if not args or not isinstance(args[-1], CustomImplementation):
            raise TypeError(f"{type(self).__name__}: the last argument must be a MobilizedBody.Custom.Implementation,"
                            f" got {type(args[-1]).__name__ if args else 'nothing'}")
        impl = args[-1]
        if impl._mobod is not None:
            raise ValueError(f"{type(self).__name__}: this implementation object already belongs to "
                             f"{impl._mobod!r}")
        if isinstance(parent, MobilizedBody) and impl._matter is not parent._matter:
            check_system(f"MobilizedBody.{type(self).__name__}", impl._matter, parent._matter._system,
                         "the implementation's matter subsystem")
        if direction != MobilizedBody.Forward:
            raise NotImplementedError(f"{type(self).__name__}: a Custom mobilizer cannot be reversed; write the "
                                      "reversed kinematics in its implementation instead")
        self._attach(impl)
        super().__init__(parent, *args[:-1], direction=direction)
        impl._mobod = self

    def _attach(self, impl: CustomImplementation) -> None:
        self._impl = impl
        # Which optional methods the user overrode, so the default ones cost nothing per stage.
        self._hooks = {s: getattr(impl, f"realize_{s}") for s in _HOOKS if impl._overrides(f"realize_{s}")}
        self._n_identity = not (impl._overrides("multiply_by_n_matrix") or impl._overrides("multiply_by_n_dot_matrix"))
        if impl._nq != impl._nu and not (impl._overrides("multiply_by_n_matrix")
                                         and impl._overrides("multiply_by_n_inv_matrix")):
            raise ValueError(f"{type(self).__name__}: {type(impl).__name__} has nq = {impl._nq} != nu = {impl._nu}, "
                             "so it must override multiply_by_n_matrix() and multiply_by_n_inv_matrix() "
                             "(and multiply_by_n_dot_matrix() unless NDot = 0)")
        self._scratch_index = -1

    def get_implementation(self) -> CustomImplementation:
        """The user's implementation object."""
        return self._impl

    # ------------------------------------------------------------------ raw access (no stage checks)
    def _ws(self, state: "State"):
        m = self._matter
        return state._subs[m._index].cache[m._cache_index].value.ws

    def _raw_q(self, state: "State") -> np.ndarray:
        m = self._matter
        layout = state._subs[m._index].cache[m._layout_index].value
        q0 = int(layout.qoff[self._index])
        return state._subs[m._index].q_ro[q0:q0 + self._impl._nq]

    def _raw_u(self, state: "State") -> np.ndarray:
        m = self._matter
        layout = state._subs[m._index].cache[m._layout_index].value
        u0 = int(layout.uoff[self._index])
        return state._subs[m._index].u_ro[u0:u0 + self._impl._nu]

    def _where(self) -> str:
        return f"{self!r} ({type(self._impl).__name__})"

    def _spatial(self, x, what: str) -> np.ndarray:
        a = np.asarray(x, dtype=np.float64)
        if a.shape != (2, 3):
            raise ValueError(f"{self._where()}.{what} must return a (2, 3) spatial vector, got shape {a.shape}")
        return a

    def _vector(self, x, n: int, what: str) -> np.ndarray:
        a = np.asarray(x, dtype=np.float64)
        if a.shape != (n,):
            raise ValueError(f"{self._where()}.{what} must return {n} values, got shape {a.shape}")
        if not np.isfinite(a).all():
            raise FloatingPointError(f"{self._where()}.{what} returned non-finite values {a}")
        return a

    # ------------------------------------------------------------------ matter hooks
    def _custom_sizes(self, state: "State") -> tuple[int, int]:
        hook = self._hooks.get("model")
        if hook is not None:
            hook(state)
        return self._impl._nq, self._impl._nu

    def _custom_stage_hook(self, stage: str):
        return self._hooks.get(stage)

    def _custom_default_q(self, state: "State") -> np.ndarray:
        return self._vector(self._impl.get_default_q(), self._impl._nq, "get_default_q()")

    def _realize_custom_instance(self, state: "State") -> None:
        hook = self._hooks.get("instance")
        if hook is not None:
            hook(state)

    def _realize_custom_position(self, state: "State", ws) -> None:
        impl = self._impl
        hook = self._hooks.get("position")
        if hook is not None:
            hook(state)
        i = self._index
        nu = impl._nu
        X = impl.calc_mobilizer_transform_from_q(state, self._raw_q(state))
        if not isinstance(X, Transform):
            raise TypeError(f"{self._where()}.calc_mobilizer_transform_from_q() must return a Transform, "
                            f"got {type(X).__name__}")
        ws.R_FM[i] = X.R.matrix
        ws.p_FM[i] = X.p
        if nu:
            u0 = int(ws.uoff[i])
            H = ws.H_FM[u0:u0 + nu]
            e = np.zeros(nu)
            mul = impl.multiply_by_h_matrix
            for j in range(nu):
                e[j] = 1.0
                H[j] = self._spatial(mul(state, e), "multiply_by_h_matrix()")
                e[j] = 0.0
            if not _all_finite(H.reshape(-1)):
                raise FloatingPointError(f"{self._where()}: multiply_by_h_matrix() gave a non-finite H at "
                                         f"q = {self._raw_q(state)}")

    def _realize_custom_velocity(self, state: "State", ws) -> None:
        impl = self._impl
        i = self._index
        u = self._raw_u(state)
        q0 = int(ws.qoff[i])
        nq = impl._nq
        # qdot = N(q) u first: HDot is d/dt H(q), so an implementation's HDot (and its velocity hook)
        # reads qdot through get_qdot(), which must be this realization's and not the last one's.
        if self._n_identity:
            ws.qdot[q0:q0 + nq] = u
        else:
            ws.qdot[q0:q0 + nq] = self._vector(impl.multiply_by_n_matrix(state, False, u), nq,
                                               "multiply_by_n_matrix()")
        hook = self._hooks.get("velocity")
        if hook is not None:
            hook(state)
        HDu = self._spatial(impl.multiply_by_h_dot_matrix(state, u), "multiply_by_h_dot_matrix()")
        if not _all_finite(HDu.reshape(-1)):
            raise FloatingPointError(f"{self._where()}: multiply_by_h_dot_matrix() returned non-finite {HDu}")
        ws.HDotu_FM[i] = HDu

    def _realize_custom_acceleration(self, state: "State", ws) -> None:
        impl = self._impl
        i = self._index
        q0, u0 = int(ws.qoff[i]), int(ws.uoff[i])
        nq, nu = impl._nq, impl._nu
        udot = ws.udot[u0:u0 + nu]
        if self._n_identity:
            ws.qdotdot[q0:q0 + nq] = udot
        else:
            u = self._raw_u(state)
            ws.qdotdot[q0:q0 + nq] = (
                self._vector(impl.multiply_by_n_matrix(state, False, udot.copy()), nq, "multiply_by_n_matrix()")
                + self._vector(impl.multiply_by_n_dot_matrix(state, False, u), nq, "multiply_by_n_dot_matrix()"))

    # Rows of the matter operators multiply_by_n / multiply_by_n_inv that the kernels leave to Python.
    def _multiply_by_n_rows(self, state: "State", transpose: bool, x: np.ndarray, out: np.ndarray) -> None:
        """Fill this body's rows of ``out`` = N x (or N^T x) from its rows of ``x`` (full-length arrays)."""
        self._n_rows(state, transpose, x, out, inverse=False)

    def _multiply_by_n_inv_rows(self, state: "State", transpose: bool, x: np.ndarray, out: np.ndarray) -> None:
        """Fill this body's rows of ``out`` = N^-1 x (or N^-T x)."""
        self._n_rows(state, transpose, x, out, inverse=True)

    def _n_rows(self, state, transpose, x, out, inverse: bool) -> None:
        impl = self._impl
        m = self._matter
        layout = state._subs[m._index].cache[m._layout_index].value
        q0, u0 = int(layout.qoff[self._index]), int(layout.uoff[self._index])
        nq, nu = impl._nq, impl._nu
        # N maps u-space to q-space; N^-1 the other way; transposes swap the spaces.
        from_q = inverse != bool(transpose)
        src = x[q0:q0 + nq] if from_q else x[u0:u0 + nu]
        n_out = nu if from_q else nq
        dst = slice(u0, u0 + nu) if from_q else slice(q0, q0 + nq)
        fn = impl.multiply_by_n_inv_matrix if inverse else impl.multiply_by_n_matrix
        name = "multiply_by_n_inv_matrix()" if inverse else "multiply_by_n_matrix()"
        out[dst] = self._vector(fn(state, bool(transpose), np.array(src, dtype=np.float64)), n_out, name)

    # ------------------------------------------------------------------ fitting
    def set_q_to_fit_transform(self, state: "State", X_FM: Transform) -> None:
        """Set q so that X_FM(q) is as close as this mobilizer allows to ``X_FM`` (the implementation's fit)."""
        X = self._transform(X_FM, "X_FM")
        q = np.array(self._raw_q(state), dtype=np.float64)
        res = self._impl.set_q_to_fit_transform(state, X, q)
        if res is not None:
            q = np.asarray(res, dtype=np.float64)
        self.set_q(state, self._vector(q, self._impl._nq, "set_q_to_fit_transform()"))

    def set_u_to_fit_velocity(self, state: "State", V_FM) -> None:
        """Set u so that H u is as close as this mobilizer allows to ``V_FM`` (2, 3), in F."""
        V = real_array(V_FM, f"{self!r}.set_u_to_fit_velocity(): V_FM", copy=False)
        if V.shape != (2, 3) or not np.isfinite(V).all():
            raise ValueError(f"{self!r}.set_u_to_fit_velocity(): V_FM must be a finite (2, 3) array")
        u = np.array(self._raw_u(state), dtype=np.float64)
        res = self._impl.set_u_to_fit_velocity(state, V, u)
        if res is not None:
            u = np.asarray(res, dtype=np.float64)
        self.set_u(state, self._vector(u, self._impl._nu, "set_u_to_fit_velocity()"))


Custom.__qualname__ = "MobilizedBody.Custom"
CustomImplementation.__qualname__ = "MobilizedBody.Custom.Implementation"
MobilizedBody.Custom = Custom
