"""MobilizedBody.FunctionBased: a mobilizer described by six functions of its coordinates (seed §3.4).

With coordinates q (n,) and qdot = u, six functions give three rotation angles theta_0..2 about
axes a_0..2 and three translations d_3..5 along axes a_3..5 (defaults X, Y, Z each):

    R_FM = R(a_0, theta_0) R(a_1, theta_1) R(a_2, theta_2)      (body-fixed sequence, as Simbody)
    p_FM = d_3 a_3 + d_4 a_4 + d_5 a_5                          (axes fixed in F)

With J the (6, n) Jacobian of the function values with respect to q and
A = [a_0 | R_0 a_1 | R_0 R_1 a_2] (the rotation axes in F):

    H_FM = [A J_rot ; T J_trans],   T = [a_3 | a_4 | a_5]
    HDot_FM u = [A b_rot + thetadot_1 (w_0 x A_1) + thetadot_2 ((w_0 + A_1 thetadot_1) x A_2) ; T b_trans]

where thetadot = J u, w_0 = A_0 thetadot_0 and b_k = u^T (d^2 f_k / dq^2) u. Functions with no
argument (``Function.Constant(c, 0)``) are evaluated once, at construction; a constant rotation
is folded into a constant matrix.

Two paths compute these equations. When all six functions are built-in families (each has a compiled
form: ``FunctionTableBuilder.try_add``), the mobilizer is a compiled joint kind: the kernels evaluate
the functions from a flat table and compute X_FM, H_FM and HDot_FM u themselves
(``core/function_joint.pxi``, from the numbers `FunctionBasedImplementation` folded here), so a model
of them (OpenSim's CustomJoints) takes the fused realization, the batch and the compiled time loop.
Otherwise (a user's Function) it is a Custom mobilizer whose rows this module's Python writes per
stage, as before. `FunctionBasedImplementation` is that Python, and the reference the compiled kind is
tested against.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Sequence

import numpy as np

from ... import _core
from ...common.function import Function, FunctionTableBuilder, require_function
from ...common.stage import Stage
from ...spatial import Body, Rotation, Transform, skew
from .custom_mobilizer import Custom, CustomImplementation
from .mobilized_body import MobilizedBody

if TYPE_CHECKING:
    from ...common.state import State
    from ..matter import SimbodyMatterSubsystem

__all__ = ["FunctionBased", "FunctionBasedImplementation"]

_ACTIVE = object()  # marks a rotation factor that depends on q
_DEFAULT_AXES = np.array([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0]] * 2)
_OWNER = "MobilizedBody.FunctionBased"


class _Scratch:
    """Per-State results of the Position stage that Velocity reuses.

    ``M`` is blockdiag(A, T) (6, 6): A = the rotation axes in F (changes with q), T = the
    translation axes (fixed), so that H_FM = (M J)^T in one product.
    """

    __slots__ = ("xs", "J", "M")

    def __init__(self, n: int, T: np.ndarray):
        self.xs: list = [None] * 6
        self.J = np.zeros((6, n))
        self.M = np.zeros((6, 6))
        self.M[3:, 3:] = T


def _cross(a, b) -> np.ndarray:
    # np.cross costs ~10 us on 3-vectors; this is ~1 us.
    a0, a1, a2 = a
    b0, b1, b2 = b
    return np.array((a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0))


class FunctionBasedImplementation(CustomImplementation):
    """The Custom implementation behind ``MobilizedBody.FunctionBased`` (usable on its own too).

    Parameters
    ----------
    matter : SimbodyMatterSubsystem
    n_mobilities : int
        n = nq = nu, 1 to 6.
    functions : sequence of 6 Function
        Rotation angles about ``axes[0:3]``, then translations along ``axes[3:6]``; each needs
        derivatives up to order 2.
    coord_indices : sequence of 6 sequences of int
        ``coord_indices[i]`` lists the coordinates passed, in order, to ``functions[i]``.
    axes : array_like, shape (6, 3), optional
        Rotation then translation axes, in F; normalized here. Default X, Y, Z, X, Y, Z.
    hdot : {"exact", "simbody"}, default "exact"
        How the rates of the moving rotation axes enter HDot (see `FunctionBased`).
    """

    def __init__(self, matter: "SimbodyMatterSubsystem", n_mobilities: int, functions: Sequence[Function],
                 coord_indices: Sequence[Sequence[int]], axes=None, hdot: str = "exact"):
        if hdot not in ("exact", "simbody"):
            raise ValueError(f"{_OWNER}: hdot must be 'exact' or 'simbody', got {hdot!r}")
        self._hdot_kind = hdot
        if isinstance(n_mobilities, (bool, np.bool_)) or not isinstance(n_mobilities, (int, np.integer)) \
                or not 1 <= int(n_mobilities) <= 6:
            raise ValueError(f"{_OWNER}: n_mobilities must be an int from 1 to 6, got {n_mobilities!r}")
        n = int(n_mobilities)
        super().__init__(matter, n, n, 0)
        functions = list(functions)
        coord_indices = list(coord_indices)
        if len(functions) != 6:
            raise ValueError(f"{_OWNER}: needs 6 functions (3 rotations, then 3 translations), got {len(functions)}")
        if len(coord_indices) != 6:
            raise ValueError(f"{_OWNER}: needs 6 lists of coordinate indices, got {len(coord_indices)}")
        self._n = n
        self._fn = []
        self._ci = []
        used = np.zeros(n, dtype=bool)
        for k, (f, ci) in enumerate(zip(functions, coord_indices)):
            idx = np.asarray(list(ci), dtype=np.int64).reshape(-1) if np.size(ci) else np.zeros(0, dtype=np.int64)
            bad = idx[(idx < 0) | (idx >= n)]
            if bad.size:
                raise ValueError(f"{_OWNER}: coord_indices[{k}] has {int(bad[0])}, but the coordinates are "
                                 f"0 to {n - 1}")
            require_function(f, argument_size=len(idx), min_derivative_order=2, owner=f"{_OWNER} functions[{k}]")
            used[idx] = True
            self._fn.append(f)
            self._ci.append(idx.astype(np.intp))
        if not used.all():
            j = int(np.flatnonzero(~used)[0])
            raise ValueError(f"{_OWNER}: coordinate {j} is passed to no function, so its mobility would not move "
                             "the body")
        A = _DEFAULT_AXES.copy() if axes is None else np.array(axes, dtype=np.float64)
        # The axes as given, before normalization: normalizing again may move a last bit, so a copy
        # rebuilt from the normalized axes would not be bitwise the original.
        self._axes_given = None if axes is None else A.copy()
        if A.shape != (6, 3) or not np.isfinite(A).all():
            raise ValueError(f"{_OWNER}: axes must be six finite 3-vectors (shape (6, 3)), got shape {A.shape}")
        norms = np.linalg.norm(A, axis=1)
        if (norms < 1e-12).any():
            raise ValueError(f"{_OWNER}: axes[{int(np.argmin(norms))}] is zero")
        A /= norms[:, None]
        for group, name in ((range(0, 3), "rotation"), (range(3, 6), "translation")):
            for i in group:
                for j in group:
                    if i < j and np.linalg.norm(np.cross(A[i], A[j])) < 1e-5:
                        raise ValueError(f"{_OWNER}: {name} axes {i} and {j} are parallel ({A[i]}, {A[j]})")
        self._axes = A
        self._T = np.ascontiguousarray(A[3:].T)  # translation axes as columns
        # Active functions take coordinates; the others are constants, evaluated once.
        self._active = [k for k in range(6) if len(self._ci[k])]
        self._theta_const = np.zeros(6)
        for k in range(6):
            if k not in self._active:
                self._theta_const[k] = float(self._fn[k].calc_value(np.zeros(0)))
        self._d1 = {k: [(m,) for m in range(len(self._ci[k]))] for k in self._active}
        self._d2 = {k: [(m, mm) for m in range(len(self._ci[k])) for mm in range(m, len(self._ci[k]))]
                    for k in self._active}
        # Rotation factors: constant ones are precomputed matrices (None for the identity).
        self._rot_const: list = []
        self._rot_parts: list = []
        for k in range(3):
            a = A[k]
            P = np.outer(a, a)
            parts = (P, np.eye(3) - P, skew(a))
            self._rot_parts.append(parts)
            if k in self._active:
                self._rot_const.append(_ACTIVE)
            else:
                th = self._theta_const[k]
                self._rot_const.append(None if th == 0.0 else parts[0] + np.cos(th) * parts[1] + np.sin(th) * parts[2])
        self._rot_active = [k for k in range(3) if k in self._active]
        # Only a rotation after another active one has an axis that moves in F.
        self._moving_axes = len(self._rot_active) > 1
        self._trans_active = [k for k in range(3, 6) if k in self._active]
        self._p_const = self._T @ self._theta_const[3:]
        self._T_is_identity = bool((self._T == np.eye(3)).all())
        # R(a, theta) = P + cos(theta) Q + sin(theta) K as one product (1, c, s) @ [P; Q; K] (3, 9).
        self._rot_basis = [np.stack(parts).reshape(3, 9) for parts in self._rot_parts]
        # Whether the kernels can run this joint: every function built in (its class compiles; a user's
        # function, even a constant, keeps the Python path) and no function fed more coordinates than
        # the compiled record holds.
        probe = FunctionTableBuilder()
        self._compilable = (all(probe.try_add(f) is not None for f in self._fn)
                            and all(len(ci) <= _core.FB_LAYOUT["max_args"] for ci in self._ci))

    # ------------------------------------------------------------------ the compiled kind's record
    def _compiled_record(self, builder: FunctionTableBuilder) -> tuple[np.ndarray, np.ndarray]:
        """This joint's record for the kernels (layout ``_core.FB_LAYOUT``, ``core/function_joint.pxi``).

        The active functions are added to ``builder`` (the matter's table); every other number is this
        object's own (the axes, the rotation bases, the folded constants), copied, so that the kernels
        compute what `_position` and `_hdot_u` compute.

        Returns
        -------
        (ndarray of int64, ndarray of float64)
            The integer and the real record.
        """
        L = _core.FB_LAYOUT
        ir = np.zeros(L["istride"], dtype=np.int64)
        dr = np.zeros(L["dstride"])
        ir[L["i_n"]] = self._n
        ir[L["i_flags"]] = ((L["moving_axes"] if self._moving_axes else 0)
                            | (L["simbody_hdot"] if self._hdot_kind == "simbody" else 0)
                            | (L["T_identity"] if self._T_is_identity else 0)
                            | (L["trans_active"] if self._trans_active else 0))
        for k in range(6):
            at = L["i_fn"] + L["i_fstride"] * k
            if k in self._active:
                ci = self._ci[k]
                ir[at] = builder.add(self._fn[k])
                ir[at + 1] = len(ci)
                ir[at + 2:at + 2 + len(ci)] = ci
            else:
                ir[at] = -1
        for k in range(3):
            Rk = self._rot_const[k]
            if Rk is _ACTIVE:
                ir[L["i_rot"] + k] = L["rot_active"]
            elif Rk is None:
                ir[L["i_rot"] + k] = L["rot_identity"]
            else:
                ir[L["i_rot"] + k] = L["rot_const"]
                dr[L["d_rconst"] + 9 * k:L["d_rconst"] + 9 * k + 9] = Rk.reshape(9)
            dr[L["d_basis"] + 27 * k:L["d_basis"] + 27 * k + 27] = self._rot_basis[k].reshape(27)
        dr[L["d_axes"]:L["d_axes"] + 18] = self._axes.reshape(18)
        dr[L["d_pconst"]:L["d_pconst"] + 3] = self._p_const
        dr[L["d_T"]:L["d_T"] + 9] = self._T.reshape(9)
        dr[L["d_theta"]:L["d_theta"] + 6] = self._theta_const
        return ir, dr

    # ------------------------------------------------------------------ the kinematics (vectorized per body)
    def _position(self, q: np.ndarray, scratch: _Scratch):
        """R_FM (3, 3), p_FM (3,) and H_FM (n, 2, 3) at q; fills ``scratch`` for ``_hdot_u``."""
        theta = self._theta_const.copy()
        J = scratch.J
        J.fill(0.0)
        xs = scratch.xs
        for k in self._active:
            f = self._fn[k]
            ci = self._ci[k]
            x = q[ci]
            xs[k] = x
            theta[k] = f.calc_value_unchecked(x)
            d = f.calc_derivative_unchecked
            for m, comp in enumerate(self._d1[k]):
                J[k, ci[m]] += d(comp, x)
        M = scratch.M
        R = None
        for k in range(3):
            Rk = self._rot_const[k]
            if Rk is _ACTIVE:
                M[:3, k] = self._axes[k] if R is None else R @ self._axes[k]
                th = theta[k]
                Rk = (np.array((1.0, math.cos(th), math.sin(th))) @ self._rot_basis[k]).reshape(3, 3)
            if Rk is not None:
                R = Rk if R is None else R @ Rk
        if R is None:
            R = np.eye(3)
        if not self._trans_active:
            p = self._p_const
        elif self._T_is_identity:
            p = theta[3:].copy()
        else:
            p = self._T @ theta[3:]
        return R, p, (M @ J).T.reshape(self._n, 2, 3)

    def _hdot_u(self, u: np.ndarray, scratch: _Scratch, v: np.ndarray | None = None) -> np.ndarray:
        """HDot_FM v (2, 3), HDot the rate of H when qdot = u (v defaults to u), from ``scratch``."""
        J, M, xs = scratch.J, scratch.M, scratch.xs
        same = v is None
        if same:
            v = u
        b = np.zeros(6)  # (dJ/dt) v, row by row
        for k in self._active:
            ci = self._ci[k]
            uk = u[ci]
            vk = uk if same else v[ci]
            d = self._fn[k].calc_derivative_unchecked
            x = xs[k]
            acc = 0.0
            for m, mm in self._d2[k]:
                if m == mm:
                    acc += d((m, mm), x) * uk[m] * vk[m]
                else:
                    acc += d((m, mm), x) * (uk[m] * vk[mm] + uk[mm] * vk[m])
            b[k] = acc
        out = (M @ b).reshape(2, 3)
        if self._moving_axes and self._hdot_kind == "simbody":
            # Simbody's FunctionBased: A_1 turns with the angular velocity of mobility 0 alone, A_2 with
            # that of every mobility but mobility 2 (both from the State's u)
            c = J[:3] @ (u if same else v)
            A = M[:3, :3]
            w0 = A @ (J[:3, 0] * u[0])
            u2 = u.copy()
            if self._n > 2:
                u2[2] = 0.0
            w01 = A @ (J[:3] @ u2)
            if c[1] != 0.0:
                out[0] += _cross(w0, M[:3, 1] * c[1])
            if c[2] != 0.0:
                out[0] += _cross(w01, M[:3, 2] * c[2])
        elif self._moving_axes:  # the rotation axes A_1, A_2 turn with the earlier rotations
            thd = J[:3] @ u
            c = thd if same else J[:3] @ v
            w0 = M[:3, 0] * thd[0]
            if c[1] != 0.0 and thd[0] != 0.0:
                out[0] += _cross(w0, M[:3, 1] * c[1])
            if c[2] != 0.0:
                w01 = w0 + M[:3, 1] * thd[1]
                if w01.any():
                    out[0] += _cross(w01, M[:3, 2] * c[2])
        return out

    def _eval_at(self, state: "State"):
        scratch = _Scratch(self._n, self._T)
        R, p, H = self._position(np.array(self.get_q(state), dtype=np.float64), scratch)
        return R, p, H, scratch

    # ------------------------------------------------------------------ Custom.Implementation interface
    def calc_mobilizer_transform_from_q(self, state: "State", q: np.ndarray) -> Transform:
        R, p, _ = self._position(np.asarray(q, dtype=np.float64), _Scratch(self._n, self._T))
        return Transform(Rotation._trusted(np.array(R)), np.array(p))

    def multiply_by_h_matrix(self, state: "State", u: np.ndarray) -> np.ndarray:
        H = self._eval_at(state)[2]
        return np.tensordot(np.asarray(u, dtype=np.float64), H, axes=(0, 0))

    def multiply_by_h_transpose(self, state: "State", F: np.ndarray) -> np.ndarray:
        H = self._eval_at(state)[2]
        return H.reshape(self._n, 6) @ np.asarray(F, dtype=np.float64).reshape(6)

    def multiply_by_h_dot_matrix(self, state: "State", u: np.ndarray) -> np.ndarray:
        # HDot is the rate of H along the State's own u; it multiplies any v linearly.
        scratch = self._eval_at(state)[3]
        return self._hdot_matrix(state, scratch) @ np.asarray(u, dtype=np.float64)

    def multiply_by_h_dot_transpose(self, state: "State", F: np.ndarray) -> np.ndarray:
        scratch = self._eval_at(state)[3]
        HD = self._hdot_matrix(state, scratch)  # (2, 3, n)
        return np.tensordot(np.asarray(F, dtype=np.float64), HD, axes=([0, 1], [0, 1]))

    def _hdot_matrix(self, state: "State", scratch: _Scratch) -> np.ndarray:
        """HDot (2, 3, n) at the State's q and u: column j is HDot e_j."""
        u = np.array(self.get_u(state), dtype=np.float64)
        n = self._n
        cols = np.zeros((2, 3, n))
        e = np.zeros(n)
        for j in range(n):
            e[j] = 1.0
            cols[:, :, j] = self._hdot_u(u, scratch, e)
            e[j] = 0.0
        return cols

    def set_u_to_fit_velocity(self, state: "State", V_FM: np.ndarray, u: np.ndarray) -> None:
        H = self._eval_at(state)[2].reshape(self._n, 6).T
        u[:] = np.linalg.lstsq(H, np.asarray(V_FM, dtype=np.float64).reshape(6), rcond=None)[0]

    def get_functions(self) -> list:
        """The six functions."""
        return list(self._fn)

    def get_coord_indices(self) -> list:
        """The six coordinate index arrays."""
        return [ci.copy() for ci in self._ci]

    def get_axes(self) -> np.ndarray:
        """The six unit axes (6, 3): rotations then translations, in F."""
        return self._axes.copy()

    def get_hdot(self) -> str:
        """How HDot treats the moving rotation axes: ``"exact"`` or ``"simbody"`` (the constructor's ``hdot``)."""
        return self._impl._hdot_kind

    def get_given_axes(self) -> np.ndarray | None:
        """The axes the constructor took, shape (6, 3), before normalization; None if it took none.

        Returns
        -------
        ndarray or None
            A copy; ``None`` when the default axes (X, Y, Z, X, Y, Z) were used.
        """
        return None if self._axes_given is None else self._axes_given.copy()

    def get_n_mobilities(self) -> int:
        """n, the number of coordinates (= speeds) the constructor took."""
        return self._n


class FunctionBased(Custom):
    """A mobilizer given by six functions of its coordinates (Simbody's ``MobilizedBody::FunctionBased``).

    Call as ``MobilizedBody.FunctionBased(parent, body, n_mobilities, functions, coord_indices,
    axes=None, X_PF=None, X_BM=None)`` or, as Simbody, ``MobilizedBody.FunctionBased(parent, X_PF,
    body, X_BM, n_mobilities, functions, coord_indices, axes=None)``.

    Parameters
    ----------
    parent : MobilizedBody
    body : Body
    n_mobilities : int
        Number of coordinates n (= number of speeds, qdot = u), 1 to 6.
    functions : sequence of 6 Function
        Three rotation angles (about ``axes[0:3]``, applied body-fixed in that order), then three
        translations (along ``axes[3:6]``, fixed in F).
    coord_indices : sequence of 6 sequences of int
        Which coordinates feed each function, in the order of its arguments.
    axes : array_like (6, 3), optional
        Default X, Y, Z, X, Y, Z.
    X_PF, X_BM : Transform, optional
        Mobilizer frames; identity by default.
    hdot : {"exact", "simbody"}, default "exact"
        ``"exact"``: HDot_FM is the time derivative of H_FM. ``"simbody"``: as Simbody's
        FunctionBased (and so OpenSim's CustomJoint) computes it, where rotation axis 1 turns with
        the angular velocity of mobility 0 alone and axis 2 with that of every mobility but mobility
        2; the two agree when mobility k drives rotation k only (most OpenSim joints), not otherwise
        (OpenSim's walker knee: one coordinate turns three axes).

    Notes
    -----
    When every function is a built-in family, the compiled core computes this mobilizer's kinematics
    (a compiled joint kind: the fused realization, the batch and the compiled time loop take it);
    with a user's `Function` its kinematics run in Python, as a ``MobilizedBody.Custom``'s do.
    """

    #: Whether a FunctionBased of built-in functions becomes the compiled kind (a private switch: False
    #: keeps every new one on the Python path, the reference of the tests and benchmarks)
    _use_compiled_kind = True

    def __init__(self, parent: MobilizedBody, *args, axes=None, X_PF=None, X_BM=None,
                 direction: str = MobilizedBody.Forward, hdot: str = "exact"):
        if args and isinstance(args[0], Body):
            body, rest = args[0], args[1:]
            X_PF = Transform() if X_PF is None else X_PF
            X_BM = Transform() if X_BM is None else X_BM
        elif len(args) >= 3 and isinstance(args[1], Body):
            if X_PF is not None or X_BM is not None:
                raise TypeError(f"{_OWNER}: X_PF and X_BM were given both positionally and as keywords")
            X_PF, body, X_BM, rest = args[0], args[1], args[2], args[3:]
        else:
            raise TypeError(f"{_OWNER}: call as FunctionBased(parent, body, n_mobilities, functions, coord_indices) "
                            "or FunctionBased(parent, X_PF, body, X_BM, n_mobilities, functions, coord_indices)")
        if len(rest) == 4 and axes is None:
            rest, axes = rest[:3], rest[3]
        if len(rest) != 3:
            raise TypeError(f"{_OWNER}: expected n_mobilities, functions and coord_indices after the body")
        n, functions, coord_indices = rest
        impl = FunctionBasedImplementation(parent.get_matter_subsystem(), n, functions, coord_indices, axes, hdot)
        self._compiled_kind = bool(type(self)._use_compiled_kind and impl._compilable)
        super().__init__(parent, X_PF, body, X_BM, impl, direction=direction)

    # ------------------------------------------------------------------ the constructor's arguments
    def get_n_mobilities(self) -> int:
        """n, the number of coordinates (= speeds)."""
        return self._impl.get_n_mobilities()

    def get_functions(self) -> list[Function]:
        """The six functions the constructor took (the same objects), rotations then translations."""
        return self._impl.get_functions()

    def get_coord_indices(self) -> list[np.ndarray]:
        """The six coordinate index arrays: ``get_coord_indices()[k]`` feeds ``get_functions()[k]``."""
        return self._impl.get_coord_indices()

    def get_axes(self) -> np.ndarray:
        """The six unit axes (6, 3), rotations then translations, in F (normalized)."""
        return self._impl.get_axes()

    def get_hdot(self) -> str:
        """How HDot treats the moving rotation axes: ``"exact"`` or ``"simbody"`` (the constructor's ``hdot``)."""
        return self._impl._hdot_kind

    def get_given_axes(self) -> np.ndarray | None:
        """The axes the constructor took, before normalization, or None for the default axes."""
        return self._impl.get_given_axes()

    # ------------------------------------------------------------------ the compiled kind
    def _custom_joint_code(self) -> int | None:
        return _core.function_joint_code(self._impl._n) if self._compiled_kind else None

    def _function_joint_record(self, builder: FunctionTableBuilder) -> tuple[np.ndarray, np.ndarray]:
        return self._impl._compiled_record(builder)

    # ------------------------------------------------------------------ fast per-stage paths (Python kind)
    def _scratch(self, state: "State") -> _Scratch:
        return state._subs[self._matter._index].cache[self._scratch_index].value

    def _realize_custom_instance(self, state: "State") -> None:
        # A place in the State for what Position computes and Velocity reuses.
        impl = self._impl
        self._scratch_index = self._matter.allocate_lazy_cache_entry(state, Stage.Position, _Scratch(impl._n, impl._T))

    def _realize_custom_position(self, state: "State", ws) -> None:
        impl = self._impl
        i = self._index
        scratch = self._scratch(state)
        R, p, H = impl._position(self._raw_q(state), scratch)
        ws.R_FM[i] = R
        ws.p_FM[i] = p
        u0 = int(ws.uoff[i])
        ws.H_FM[u0:u0 + impl._n] = H

    def _realize_custom_velocity(self, state: "State", ws) -> None:
        impl = self._impl
        i = self._index
        u = self._raw_u(state)
        ws.HDotu_FM[i] = impl._hdot_u(u, self._scratch(state))
        q0 = int(ws.qoff[i])
        ws.qdot[q0:q0 + impl._n] = u

    def _realize_custom_acceleration(self, state: "State", ws) -> None:
        i = self._index
        q0, u0 = int(ws.qoff[i]), int(ws.uoff[i])
        n = self._impl._n
        ws.qdotdot[q0:q0 + n] = ws.udot[u0:u0 + n]


FunctionBased.__qualname__ = "MobilizedBody.FunctionBased"
MobilizedBody.FunctionBased = FunctionBased
