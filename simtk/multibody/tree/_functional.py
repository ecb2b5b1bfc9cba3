"""`FunctionalDynamics`: forward dynamics, the mass matrix and inverse dynamics of one (q, u) per call.

What Pinocchio's ``aba``, ``crba`` and ``rnea`` are to its ``Model`` and ``Data``: pure functions of
the configuration over one instance of a System, without a State to set and realize. Each call is
one call into compiled code. The arguments are checked there, and the kernel runs without the GIL.
The results are bitwise those of the batched calls and of the State API (``set_q``, ``set_u``,
``realize``), which run the same compiled functions in the same order.

Get one from the matter subsystem::

    dyn = matter.functional_dynamics(state)     # the instance of ``state`` (or the default State)
    udot = dyn.calc_udot(q, u)                  # (nu,), with the System's built-in forces
    M = dyn.calc_m(q)                           # (nu, nu)
    tau = dyn.calc_inverse_dynamics(q, u, udot) # (nu,): the inverse of calc_udot

The instance (mass properties, enabled forces, Euler-angle mode) is taken when the object is made;
make a new one after changing an Instance variable. What the batched calls refuse (Custom
mobilizers, forces evaluated in Python, enabled constraints) it refuses too, with the same
messages. One object holds one scratch workspace, so use one per thread.
"""
from __future__ import annotations

from ... import _core
from ...common.errors import NonFiniteForceError

__all__ = ["FunctionalDynamics"]


class FunctionalDynamics(_core._k.PointKernels):
    """Dynamics of one configuration per call over a fixed instance (see the module).

    Methods (compiled; each returns a new array unless ``out=`` is given):

    - ``calc_udot(q, u, tau=None, out=None)``: ``udot = M(q)^-1 (f_sys(q, u) + tau - bias(q, u))``,
      shape (nu,). ``q`` (nq,) as a State holds it (quaternions need not be unit length, and none
      may be zero), ``u`` (nu,), ``tau`` (nu,) applied mobility forces added to the System's
      built-in force elements (like MuJoCo's ``qfrc_applied``).
    - ``calc_m(q, out=None)``: the mass matrix ``M(q)``, shape (nu, nu).
    - ``calc_inverse_dynamics(q, u, udot, out=None)``: the ``tau`` that, with the System's
      built-in forces, gives ``udot``: ``M udot + bias - f_sys``, shape (nu,).

    Raises ``ValueError`` for a wrong shape, a non-finite entry or a zero quaternion (naming the
    argument and the entry), `NonFiniteForceError` naming the force element whose forces are not
    finite, and ``FloatingPointError`` when the result is not finite.
    """

    def __init__(self, matter, entry):
        super().__init__(entry.batch, entry.quat_q)
        self._where = matter._where()
        self._packed = entry.packed

    def _failure(self, method: str, force_set: int, element: int):
        if force_set >= 0:
            e = self._packed[force_set].elements[element]
            raise NonFiniteForceError(f"{self._where}: {method}: {e!r}: its forces are not finite in this "
                                      f"configuration{e._singularity_hint()}", e)
        raise FloatingPointError(f"{self._where}: {method}: the result is not finite; realize this configuration "
                                 "with the State API for a diagnosis (a singular articulated inertia, an overflow)")

    def __repr__(self) -> str:
        return f"FunctionalDynamics({self._where}, nq={self.nq}, nu={self.nu})"
