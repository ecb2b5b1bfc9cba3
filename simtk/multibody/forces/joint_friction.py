"""``Force.MobilityCoulombFriction``: Coulomb friction on one mobility, a compiled force kind.

The friction is smoothed so that it is a smooth function of the speed (an integrator then needs no
event at u = 0): ``f = -mu tanh(u / v_eps)``. It is mu's sign function beyond a few ``v_eps`` and,
near rest, a viscous damping of coefficient mu / v_eps, so a joint loaded below mu creeps at a speed
of about v_eps tau / mu rather than sticking (what URDF's ``<dynamics friction>`` asks of a simulator
is not defined further; MuJoCo's ``frictionloss`` is a constraint instead). The core evaluates it
(core/mobility_friction.pxi) in bulk, with the other compiled elements.
"""
from __future__ import annotations

from ... import _core
from ...common.property import Property, nonnegative, positive
from ...common.stage import Stage
from .builtin_forces import _element, _MobilityElement, _real
from .force import _Packed


@_element("MobilityCoulombFriction")
class _MobilityCoulombFriction(_MobilityElement):
    """Smoothed Coulomb friction ``-mu tanh(u / v_eps)`` on one speed (no potential energy).

    Parameters
    ----------
    forces : GeneralForceSubsystem
        The subsystem that holds the element.
    mobod : MobilizedBody
        The body whose mobility it acts on.
    which_u : int
        Which of the body's mobilities.
    mu : float
        The friction force (N) or torque (N m) at speeds well above v_eps, >= 0.
    v_eps : float
        The speed (m/s or rad/s) at which the force reaches tanh(1) = 0.76 of mu, > 0.
    """

    _needs_q = False

    friction = Property(stage=Stage.Instance, check=nonnegative, attr="_mu", doc="mu (N or N m), >= 0")
    transition_velocity = Property(stage=Stage.Instance, check=positive, attr="_v_eps",
                                   doc="v_eps (m/s or rad/s), > 0")

    def __init__(self, forces, mobod, which_u: int, mu: float, v_eps: float = 1e-3):
        self._mu = _real(mu, "Force.MobilityCoulombFriction: mu", nonnegative=True)
        self._v_eps = _real(v_eps, "Force.MobilityCoulombFriction: v_eps")
        if not self._v_eps > 0:
            raise ValueError(f"Force.MobilityCoulombFriction: v_eps must be > 0, got {v_eps!r}")
        super().__init__(forces, mobod, which_u)

    @classmethod
    def _pack(cls, elements, matter, state):
        _, ui = cls._indices(elements, matter, state)
        return _Packed(_core.mobility_coulomb_friction_set(ui, [e._mu for e in elements],
                                                           [e._v_eps for e in elements]), elements)
