"""OpenSim 4.6's DeGrooteFregly2016Muscle law, in scalars: the test oracle of the compiled kind
(core/degroote.pxi, which ``Force.DeGrooteFregly2016Muscle`` evaluates), and its equilibrium.

Written from De Groote et al. (2016) and OpenSim's published constants (its b, c, d coefficients,
adjusted as OpenSim's so the curves pass through (1, 1), (-1, 0), (0, 1) and zero tendon force at
slack):

- active force-length: three Gaussian-like terms of x = (l~ - 1)/active_force_width_scale + 1;
  passive: (exp(4 (l~ - 1)/e0) - exp(4 (0.2 - 1)/e0)) / (exp(4) - exp(4 (0.2 - 1)/e0)); force-velocity
  d1 log(d2 v + d3 + sqrt((d2 v + d3)^2 + 1)) + d4 and its inverse (sinh); tendon
  c1 exp(kT (l~T - c2)) - c3 with kT from ``tendon_strain_at_one_norm_force``;
- the fiber at constant width w = l_opt sin(phi_opt): l_M = sqrt((L - l_T)^2 + w^2);
- elastic tendon (OpenSim's explicit ``tendon_compliance_dynamics_mode``): the state is the
  normalized tendon force; the fiber velocity is the inverse force-velocity curve at
  (f_T / cos phi - f_PE) / (a f_L), its derivative the tendon's stretch rate times the tendon
  curve's slope; rigid tendon: the fiber follows the path, the tendon force is the fiber force along it;
- activation: da/dt = (e - a) [ (f + 1/2)/(tau_a (1/2 + 3a/2)) + (1/2 - f)(1/2 + 3a/2)/tau_d ],
  f = tanh(b (e - a))/2 with b = ``activation_dynamics_smoothing``;
- equilibrium: OpenSim's bisection on the normalized tendon force in [0, 5] (tolerance 1e-10),
  the tendon static and the path's speed taken by the fiber.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ._muscle import MuscleInfo

__all__: list[str] = []

_B = ((0.8150671134243542, 1.055033428970575, 0.162384573599574, 0.063303448465465),
      (0.433004984392647, 0.716775413397760, -0.029947116970696, 0.200356847296188),
      (0.1, 1.0, 0.353553390593274, 0.0))
_KPE = 4.0
_C1, _C2, _C3 = 0.200, 1.0, 0.200
_D1, _D2, _D3, _D4 = -0.3211346127989808, -8.149, -0.374, 0.8825327733249912
_MIN_NORM_FIBER_LENGTH = 0.2
_MIN_NTF, _MAX_NTF = 0.0, 5.0
_SIGNIFICANT = 2.220446049250313e-16 ** 0.875


@dataclass(frozen=True)
class DeGrooteParams:
    """A DeGrooteFregly2016Muscle's properties (OpenSim's names and defaults)."""

    max_isometric_force: float
    optimal_fiber_length: float
    tendon_slack_length: float
    pennation_angle_at_optimal: float = 0.0
    max_contraction_velocity: float = 10.0
    activation_time_constant: float = 0.015
    deactivation_time_constant: float = 0.060
    active_force_width_scale: float = 1.0
    fiber_damping: float = 0.0
    passive_fiber_strain_at_one_norm_force: float = 0.6
    tendon_strain_at_one_norm_force: float = 0.049
    activation_dynamics_smoothing: float = 0.1
    ignore_tendon_compliance: bool = False
    ignore_activation_dynamics: bool = False
    ignore_passive_fiber_force: bool = False


def _gauss(x: float, b1: float, b2: float, b3: float, b4: float) -> float:
    return b1 * math.exp(-0.5 * (x - b2) ** 2 / (b3 + b4 * x) ** 2)


def force_velocity(v: float) -> float:
    """f_V at the normalized fiber velocity v."""
    t = _D2 * v + _D3
    return _D1 * math.log(t + math.sqrt(t * t + 1.0)) + _D4


def force_velocity_inverse(fv: float) -> float:
    """The normalized fiber velocity at f_V."""
    return (math.sinh((fv - _D4) / _D1) - _D3) / _D2


class DeGrooteLaw:
    """The law of one muscle (see the module's notes)."""

    def __init__(self, params: DeGrooteParams, where: str):
        p = params

        def bad(name: str, why: str):
            raise ValueError(f"{where}: {name} = {getattr(p, name)!r}: {why}")
        for name in ("max_isometric_force", "optimal_fiber_length", "tendon_slack_length", "max_contraction_velocity",
                     "activation_time_constant", "deactivation_time_constant",
                     "passive_fiber_strain_at_one_norm_force", "tendon_strain_at_one_norm_force",
                     "activation_dynamics_smoothing"):
            if not getattr(p, name) > 0.0:
                bad(name, "must be greater than zero")
        if not p.active_force_width_scale >= 1.0:
            bad("active_force_width_scale", "must be >= 1")
        if not p.fiber_damping >= 0.0:
            bad("fiber_damping", "must be >= 0")
        if not 0.0 <= p.pennation_angle_at_optimal <= math.pi / 2 - _SIGNIFICANT:
            bad("pennation_angle_at_optimal", "must be in [0, pi/2)")
        self.params = p
        self.width = p.optimal_fiber_length * math.sin(p.pennation_angle_at_optimal)
        self.kT = math.log((1.0 + _C3) / _C1) / (1.0 + p.tendon_strain_at_one_norm_force - _C2)
        self.elastic = not p.ignore_tendon_compliance
        e0 = p.passive_fiber_strain_at_one_norm_force
        self._pe_offset = math.exp(_KPE * (_MIN_NORM_FIBER_LENGTH - 1.0) / e0)
        self._pe_den = math.exp(_KPE) - self._pe_offset
        self.min_fiber_length = 0.0
        names = []
        if not p.ignore_activation_dynamics:
            names.append("activation")
        if self.elastic:
            names.append("normalized_tendon_force")
        self.state_names = tuple(names)

    # ------------------------------------------------------------------ curves
    def active_force_length(self, lceN: float) -> float:
        x = (lceN - 1.0) / self.params.active_force_width_scale + 1.0
        return sum(_gauss(x, *b) for b in _B)

    def passive_force(self, lceN: float) -> float:
        if self.params.ignore_passive_fiber_force:
            return 0.0
        e0 = self.params.passive_fiber_strain_at_one_norm_force
        return (math.exp(_KPE * (lceN - 1.0) / e0) - self._pe_offset) / self._pe_den

    def tendon_force(self, tlN: float) -> float:
        return _C1 * math.exp(self.kT * (tlN - _C2)) - _C3

    def tendon_force_slope(self, tlN: float) -> float:
        return _C1 * self.kT * math.exp(self.kT * (tlN - _C2))

    def tendon_length(self, ntf: float) -> float:
        """The normalized tendon length at a normalized tendon force."""
        return math.log((ntf + _C3) / _C1) / self.kT + _C2

    # ------------------------------------------------------------------ pieces
    def defaults(self, default_activation: float, default_normalized_tendon_force: float) -> dict:
        out = {}
        if "activation" in self.state_names:
            out["activation"] = default_activation
        if "normalized_tendon_force" in self.state_names:
            out["normalized_tendon_force"] = default_normalized_tendon_force
        return out

    def clamp_activation(self, a: float) -> float:
        return a  # (DeGroote-Fregly's activation is not clamped)

    def activation_rate(self, a: float, e: float) -> float:
        p = self.params
        k = 0.5 + 1.5 * a
        f = 0.5 * math.tanh(p.activation_dynamics_smoothing * (e - a))
        return ((f + 0.5) / (p.activation_time_constant * k) + (0.5 - f) * k / p.deactivation_time_constant) * (e - a)

    def _geometry(self, L: float, tlN: float):
        tl = self.params.tendon_slack_length * tlN
        along = L - tl
        lce = math.sqrt(along * along + self.width * self.width)
        return tl, along, lce, along / lce, self.width / lce

    def _state(self, a: float, L: float, Ldot: float, ntf: float | None, explicit: bool, ntf_dot: float = 0.0):
        p = self.params
        fiso, ofl, tsl = p.max_isometric_force, p.optimal_fiber_length, p.tendon_slack_length
        vmax = p.max_contraction_velocity * ofl
        tlN = 1.0 if ntf is None else self.tendon_length(ntf)
        tl, along, lce, cosphi, sinphi = self._geometry(L, tlN)
        lceN = lce / ofl
        fpe, fal = self.passive_force(lceN), self.active_force_length(lceN)
        if explicit and ntf is not None:
            fv = (ntf / cosphi - fpe) / (a * fal)
            dlceN = force_velocity_inverse(fv)
            dlce = dlceN * vmax
            dtl = Ldot - dlce / cosphi
        else:
            dtl = 0.0 if ntf is None else tsl * ntf_dot / self.tendon_force_slope(tlN)
            dlce = (Ldot - dtl) * cosphi
            dlceN = dlce / vmax
            fv = force_velocity(dlceN)
        aFm = fiso * a * fal * fv
        pFm = fiso * fpe + fiso * p.fiber_damping * dlceN
        fm = aFm + pFm
        tendon = fm * cosphi if ntf is None else fiso * ntf
        return MuscleInfo(a, lce, math.asin(sinphi), tl, dlce, dtl, fal, fpe, fv, fm, aFm, pFm, tendon, False), \
            tlN, cosphi

    # ------------------------------------------------------------------ the muscle at a state
    def evaluate(self, z: tuple, L: float, Ldot: float, e: float, where: str = "DeGrooteFregly2016Muscle"
                 ) -> MuscleInfo:
        p = self.params
        k = 0
        if p.ignore_activation_dynamics:
            a, adot = e, None
        else:
            a, k = z[0], 1
            adot = self.activation_rate(a, e)
        ntf = z[k] if self.elastic else None
        info, tlN, _ = self._state(a, L, Ldot, ntf, True)
        ntf_dot = info.tendon_velocity / p.tendon_slack_length * self.tendon_force_slope(tlN) if self.elastic \
            else None
        info.zdot = tuple(d for d in (adot, ntf_dot) if d is not None)
        return info

    def equilibrium(self, z: tuple, L: float, Ldot: float, e: float, where: str) -> tuple:
        """The states with OpenSim's equilibrium normalized tendon force (its bisection) at the
        activation of ``z``."""
        if not self.elastic:
            return z
        p = self.params
        a = e if p.ignore_activation_dynamics else z[0]

        def residual(ntf: float) -> float:
            info, _, cosphi = self._state(a, L, Ldot, ntf, False)
            return ntf - info.fiber_force * cosphi / p.max_isometric_force

        left, right = _MIN_NTF, _MAX_NTF
        if residual(left) * residual(right) >= 0.0:
            raise ArithmeticError(f"{where}: the equilibrium residual has the same sign at normalized tendon forces "
                                  f"{left} and {right} (activation {a!r}, path length {L!r})")
        mid, r_left, it = left, residual(left), 0
        while it < 100 and right - left > 1e-10:
            mid = 0.5 * (left + right)
            r_mid = residual(mid)
            if r_mid * r_left < 0.0:
                right = mid
            else:
                left = mid
                r_left = residual(left)
            it += 1
        return tuple(mid if n == "normalized_tendon_force" else v for n, v in zip(self.state_names, z))


PARAMS = DeGrooteParams
LAW = DeGrooteLaw
