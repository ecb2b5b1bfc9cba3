"""OpenSim 4.6's Millard2012EquilibriumMuscle law, in scalars (the strategy of ``Force.Millard2012EquilibriumMuscle``).

Written from Millard et al. (2013) and OpenSim's published equations, so the same state gives the
same numbers:

- curves: ``_bezier``'s ActiveForceLengthCurve, FiberForceLengthCurve, ForceVelocityCurve,
  TendonForceLengthCurve, and a ForceVelocityInverseCurve built from the force-velocity parameters with
  end slopes half the near-vmax ones. As OpenSim's finalizeFromProperties does, the damped model
  (``fiber_damping`` >= 0.001, or a rigid tendon) uses an active force-length minimum of 0 and zero
  force-velocity end slopes; the undamped elastic-tendon model raises the minimum to 0.1 and the end
  slopes to half the near ones (and needs ``minimum_activation`` >= 0.01);
- pennation at constant parallelogram height (MuscleFixedWidthPennationModel); the fiber clamped
  below at the larger of the pennation limit and the active curve's minimum active length;
- fiber velocity: undamped, the inverse force-velocity curve at f_V = (f_SE/cos phi - f_PE)/(a f_L);
  damped, OpenSim's Newton iteration on a f_L f_V(v) + f_PE + beta v = f_SE / cos phi; rigid tendon,
  the path's speed along the fiber, the fiber force kept >= 0 by saturating the damping;
- activation: MuscleFirstOrderActivationDynamicModel; equilibrium: OpenSim's
  ``estimateMuscleFiberState`` static solution (computeInitialFiberEquilibrium).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from . import _bezier
from ._muscle import MuscleInfo, first_order_activation_rate

__all__: list[str] = []

_EPS = 2.220446049250313e-16
_SIGNIFICANT = _EPS ** 0.875
_SQRT_EPS = math.sqrt(_EPS)
_MIN_DAMPING = 0.001

#: the curve properties by the OpenSim object that holds them (``<Curve>_<property>`` in the params)
CURVES = {
    "ActiveForceLengthCurve": ("min_norm_active_fiber_length", "transition_norm_fiber_length",
                               "max_norm_active_fiber_length", "shallow_ascending_slope", "minimum_value"),
    "ForceVelocityCurve": ("concentric_slope_at_vmax", "concentric_slope_near_vmax", "isometric_slope",
                           "eccentric_slope_at_vmax", "eccentric_slope_near_vmax",
                           "max_eccentric_velocity_force_multiplier", "concentric_curviness", "eccentric_curviness"),
    "FiberForceLengthCurve": ("strain_at_zero_force", "strain_at_one_norm_force", "stiffness_at_low_force",
                              "stiffness_at_one_norm_force", "curviness"),
    "TendonForceLengthCurve": ("strain_at_one_norm_force", "stiffness_at_one_norm_force", "norm_force_at_toe_end",
                               "curviness"),
}
#: the optional curve properties (None: OpenSim's fitted values)
OPTIONAL = ("FiberForceLengthCurve_stiffness_at_low_force", "FiberForceLengthCurve_stiffness_at_one_norm_force",
            "FiberForceLengthCurve_curviness", "TendonForceLengthCurve_stiffness_at_one_norm_force",
            "TendonForceLengthCurve_norm_force_at_toe_end", "TendonForceLengthCurve_curviness")


@dataclass(frozen=True)
class MillardParams:
    """A Millard2012EquilibriumMuscle's properties (OpenSim's names and defaults; a curve's
    property is ``<Curve>_<property>``)."""

    max_isometric_force: float
    optimal_fiber_length: float
    tendon_slack_length: float
    pennation_angle_at_optimal: float = 0.0
    max_contraction_velocity: float = 10.0
    fiber_damping: float = 0.1
    activation_time_constant: float = 0.010
    deactivation_time_constant: float = 0.040
    minimum_activation: float = 0.01
    maximum_pennation_angle: float = math.acos(0.1)
    ignore_tendon_compliance: bool = False
    ignore_activation_dynamics: bool = False
    ActiveForceLengthCurve_min_norm_active_fiber_length: float = 0.47 - 0.0259
    ActiveForceLengthCurve_transition_norm_fiber_length: float = 0.73
    ActiveForceLengthCurve_max_norm_active_fiber_length: float = 1.8123
    ActiveForceLengthCurve_shallow_ascending_slope: float = 0.8616
    ActiveForceLengthCurve_minimum_value: float = 0.1
    ForceVelocityCurve_concentric_slope_at_vmax: float = 0.0
    ForceVelocityCurve_concentric_slope_near_vmax: float = 0.25
    ForceVelocityCurve_isometric_slope: float = 5.0
    ForceVelocityCurve_eccentric_slope_at_vmax: float = 0.0
    ForceVelocityCurve_eccentric_slope_near_vmax: float = 0.15
    ForceVelocityCurve_max_eccentric_velocity_force_multiplier: float = 1.4
    ForceVelocityCurve_concentric_curviness: float = 0.6
    ForceVelocityCurve_eccentric_curviness: float = 0.9
    FiberForceLengthCurve_strain_at_zero_force: float = 0.0
    FiberForceLengthCurve_strain_at_one_norm_force: float = 0.7
    FiberForceLengthCurve_stiffness_at_low_force: float | None = None
    FiberForceLengthCurve_stiffness_at_one_norm_force: float | None = None
    FiberForceLengthCurve_curviness: float | None = None
    TendonForceLengthCurve_strain_at_one_norm_force: float = 0.049
    TendonForceLengthCurve_stiffness_at_one_norm_force: float | None = None
    TendonForceLengthCurve_norm_force_at_toe_end: float | None = None
    TendonForceLengthCurve_curviness: float | None = None

    def curve(self, name: str) -> dict:
        """One curve's properties by their OpenSim names."""
        return {k: getattr(self, f"{name}_{k}") for k in CURVES[name]}


def _check(p: MillardParams, where: str) -> None:
    def bad(name: str, why: str):
        raise ValueError(f"{where}: {name} = {getattr(p, name)!r}: {why}")
    for name in ("max_isometric_force", "optimal_fiber_length", "tendon_slack_length", "max_contraction_velocity",
                 "activation_time_constant", "deactivation_time_constant"):
        if not getattr(p, name) > 0.0:
            bad(name, "must be greater than zero")
    if not p.fiber_damping >= 0.0:
        bad("fiber_damping", "must be >= 0")
    if not 0.0 <= p.pennation_angle_at_optimal <= math.pi / 2 - _SIGNIFICANT:
        bad("pennation_angle_at_optimal", "must be in [0, pi/2)")
    if not 0.0 <= p.maximum_pennation_angle <= math.pi / 2:
        bad("maximum_pennation_angle", "must be in [0, pi/2]")
    if not 0.0 <= p.minimum_activation <= 1.0 - _SIGNIFICANT:
        bad("minimum_activation", "must be in [0, 1)")
    if not (p.ignore_tendon_compliance or p.fiber_damping >= _MIN_DAMPING) and p.minimum_activation < 0.01:
        bad("minimum_activation", "must be >= 0.01 for the undamped model with an elastic tendon (the fiber "
            "velocity is singular at zero activation)")
    for name in ("ForceVelocityCurve_concentric_slope_near_vmax", "ForceVelocityCurve_eccentric_slope_near_vmax"):
        if not getattr(p, name) >= _SQRT_EPS:
            bad(name, "must be at least sqrt(eps)")


class MillardLaw:
    """The law of one muscle: its finalized curves and properties (see the module's notes)."""

    def __init__(self, params: MillardParams, where: str):
        _check(params, where)
        self.params = params
        self.damped = params.fiber_damping >= _MIN_DAMPING
        self.beta = params.fiber_damping if self.damped else 0.0
        self.elastic = not params.ignore_tendon_compliance
        fv = params.curve("ForceVelocityCurve")
        fal = params.curve("ActiveForceLengthCurve")
        near_c, near_e = fv["concentric_slope_near_vmax"], fv["eccentric_slope_near_vmax"]
        if self.elastic and not self.damped:
            fal["minimum_value"] = max(fal["minimum_value"], 0.1)
            fv["concentric_slope_at_vmax"] = max(fv["concentric_slope_at_vmax"], 0.5 * near_c)
            fv["eccentric_slope_at_vmax"] = max(fv["eccentric_slope_at_vmax"], 0.5 * near_e)
        else:
            for d, k in ((fal, "minimum_value"), (fv, "concentric_slope_at_vmax"), (fv, "eccentric_slope_at_vmax")):
                if d[k] > 0.0:
                    d[k] = 0.0
        self.fal = _bezier.active_force_length(**fal, where=f"{where}: ActiveForceLengthCurve")
        self.fv = _bezier.force_velocity(**fv, where=f"{where}: ForceVelocityCurve")
        inv = dict(fv, concentric_slope_at_vmax=0.5 * near_c, eccentric_slope_at_vmax=0.5 * near_e)
        self.fv_inv = _bezier.force_velocity_inverse(**inv, where=f"{where}: ForceVelocityInverseCurve")
        self.fpe = _bezier.fiber_force_length(**params.curve("FiberForceLengthCurve"),
                                              where=f"{where}: FiberForceLengthCurve")
        self.fse = _bezier.tendon_force_length(**params.curve("TendonForceLengthCurve"),
                                               where=f"{where}: TendonForceLengthCurve")
        ofl = params.optimal_fiber_length
        self.height = ofl * math.sin(params.pennation_angle_at_optimal)
        self.max_sin = math.sin(params.maximum_pennation_angle)
        if params.maximum_pennation_angle > _SIGNIFICANT:
            pen_min = self.height / self.max_sin
        else:
            pen_min = 0.01 * ofl
        self.pen_min = pen_min
        self.pen_min_along = pen_min * math.cos(params.maximum_pennation_angle)
        self.min_fiber_length = max(_SIGNIFICANT, max(fal["min_norm_active_fiber_length"] * ofl, pen_min))
        names = []
        if not params.ignore_activation_dynamics:
            names.append("activation")
        if self.elastic:
            names.append("fiber_length")
        self.state_names = tuple(names)

    # ------------------------------------------------------------------ pieces
    def defaults(self, default_activation: float, default_fiber_length: float) -> dict:
        out = {}
        if "activation" in self.state_names:
            out["activation"] = self.clamp_activation(default_activation)
        if "fiber_length" in self.state_names:
            out["fiber_length"] = max(default_fiber_length, self.min_fiber_length)
        return out

    def clamp_activation(self, a: float) -> float:
        return min(1.0, max(self.params.minimum_activation, a))

    def pennation(self, lce: float) -> float:
        if self.params.pennation_angle_at_optimal > _EPS:
            if lce > self.pen_min:
                s = self.height / lce
                return math.asin(s) if s < self.max_sin else self.params.maximum_pennation_angle
            return self.params.maximum_pennation_angle
        return 0.0

    def _fiber_length_from(self, L: float, tl: float) -> float:
        along = L - tl
        if along >= self.pen_min_along:
            return math.sqrt(self.height * self.height + along * along)
        return self.pen_min

    def _dphi_dlce(self, lce: float) -> float:
        r = self.height / lce
        return (-r / lce) / math.sqrt(1.0 - r * r)

    def _damped_velocity(self, fiso, a, fal, fpe, fse, cosphi, where) -> tuple[float, float]:
        tol = max(1e-10 * fiso, _SIGNIFICANT * 100.0)
        fv0 = (fse / max(cosphi, 0.01) - fpe) / (max(a, 0.01) * max(fal, 0.01))
        v = min(1.0, max(-1.0, self.fv_inv.value(fv0)))
        err, fv, it = 1e10, 0.0, 0
        while abs(err) > tol and it < 20:
            fv, dfv = self.fv.value_and_slope(v)
            err = fiso * (a * fal * fv + fpe + self.beta * v) * cosphi - fse * fiso
            d = fiso * (a * fal * dfv + self.beta) * cosphi
            if abs(err) > tol and abs(d) > _SIGNIFICANT:
                v -= err / d
            it += 1
        if not abs(err) <= tol:
            raise ArithmeticError(f"{where}: the damped fiber velocity Newton iteration did not converge")
        return v, fv

    # ------------------------------------------------------------------ the muscle at a state
    def evaluate(self, z: tuple, L: float, Ldot: float, e: float, where: str = "Millard2012EquilibriumMuscle"
                 ) -> MuscleInfo:
        p = self.params
        fiso, ofl, tsl, vmax = p.max_isometric_force, p.optimal_fiber_length, p.tendon_slack_length, \
            p.max_contraction_velocity
        k = 0
        if p.ignore_activation_dynamics:
            a = self.clamp_activation(e)
            adot = None
        else:
            a = self.clamp_activation(z[0])
            adot = first_order_activation_rate(z[0], e, p.activation_time_constant, p.deactivation_time_constant,
                                               p.minimum_activation)
            k = 1
        if self.elastic:
            lce = max(z[k], self.min_fiber_length)
        else:
            lce = max(self._fiber_length_from(L, tsl), self.min_fiber_length)
        lceN = lce / ofl
        phi = self.pennation(lce)
        cosphi, sinphi = math.cos(phi), math.sin(phi)
        tl = L - lce * cosphi
        fpe, dfpe = self.fpe.value_and_slope(lceN)
        fal, dfal = self.fal.value_and_slope(lceN)
        fse = math.nan
        if not self.elastic:
            if tl < tsl - _SIGNIFICANT:
                dlce = dlceN = 0.0
                fv = 1.0
            else:
                dlce = Ldot * cosphi
                dlceN = dlce / (ofl * vmax)
                fv = self.fv.value(dlceN)
        elif not self.damped:
            fse = self.fse.value(tl / tsl)
            if not (cosphi > _SIGNIFICANT and a > _SIGNIFICANT and fal > _SIGNIFICANT):
                raise ArithmeticError(f"{where}: the undamped fiber velocity is singular (cos(pennation) "
                                      f"{cosphi!r}, activation {a!r}, active force-length {fal!r})")
            fv = (fse / cosphi - fpe) / (a * fal)
            dlceN = self.fv_inv.value(fv)
            dlce = dlceN * vmax * ofl
        else:
            fse = self.fse.value(tl / tsl)
            dlceN, fv = self._damped_velocity(fiso, a, fal, fpe, fse, cosphi, where)
            dlce = dlceN * ofl * vmax
        dphi = -(dlce / lce) * math.tan(phi) if p.pennation_angle_at_optimal > _EPS else 0.0
        dtl = Ldot - dlce * cosphi + lce * sinphi * dphi if self.elastic else 0.0
        clamped = lce <= self.min_fiber_length and dlce <= 0.0
        aFm = pFm = fm = 0.0
        if clamped:
            dlce = dlceN = 0.0
            dtl, fv = Ldot, 1.0
        else:
            aFm = fiso * a * fal * fv
            p1, p2 = fiso * fpe, fiso * self.beta * dlceN
            fm = aFm + p1 + p2
            if not self.elastic and fm < 0.0:
                fm, p2 = 0.0, -aFm - p1
            pFm = p1 + p2
        tendon = fse * fiso if self.elastic else fm * cosphi
        zdot = tuple(d for d in (adot, dlce if self.elastic else None) if d is not None)
        return MuscleInfo(a, lce, phi, tl, dlce, dtl, fal, fpe, fv, fm, aFm, pFm, tendon, clamped, zdot)

    def equilibrium(self, z: tuple, L: float, Ldot: float, e: float, where: str) -> tuple:
        """The states with the fiber length of OpenSim's static equilibrium (estimateMuscleFiberState
        with zero path speed) at the activation of ``z``."""
        p = self.params
        if not self.elastic:
            return z
        a_raw = e if p.ignore_activation_dynamics else z[0]
        a = self.clamp_activation(a_raw)
        fiso, ofl, tsl = p.max_isometric_force, p.optimal_fiber_length, p.tendon_slack_length
        tol = max(1e-8 * fiso, _SIGNIFICANT * 10.0)
        lmin = self.min_fiber_length
        lce = max(self._fiber_length_from(L, tsl * 1.01), lmin)

        def at(lce: float):
            phi = self.pennation(lce)
            cosphi, sinphi = math.cos(phi), math.sin(phi)
            tlN = (L - lce * cosphi) / tsl
            fal, dfal = self.fal.value_and_slope(lce / ofl)
            fpe, dfpe = self.fpe.value_and_slope(lce / ofl)
            fse, dfse = self.fse.value_and_slope(tlN)
            fm = fiso * (a * fal + fpe)  # fv = 1, zero fiber velocity: no damping force
            ferr = fm * cosphi - fse * fiso
            dfm = fiso * (a * dfal + dfpe) / ofl
            dphi = self._dphi_dlce(lce) if self.height > 0.0 else 0.0
            dfmat = dfm * cosphi + fm * (-sinphi * dphi)
            dft = dfse * fiso / tsl * (lce * sinphi * dphi - cosphi)
            return ferr, dfmat - dft, fse

        ferr, slope, fse = at(lce)
        ferr_prev, lce_prev = ferr, lce
        it = 0
        while abs(ferr) > tol and it < 200:
            h = 1.0
            while abs(ferr) >= abs(ferr_prev):
                step = -h * ferr_prev / slope
                if abs(step) > _SIGNIFICANT:
                    lce = lce_prev + step
                else:
                    lce = lce_prev - math.copysign(1.0, step) * _SQRT_EPS if step != 0.0 else lce_prev
                    h = 0.0
                lce = max(lce, lmin)
                ferr, _, fse = at(lce)
                if h <= _SQRT_EPS:
                    break
                h *= 0.5
            ferr_prev, lce_prev = ferr, lce
            _, slope, _ = at(lce)
            it += 1
        if not abs(ferr) < tol and not lce <= lmin:
            raise ArithmeticError(f"{where}: no equilibrium fiber length found: force error {abs(ferr)!r} N after "
                                  f"200 Newton iterations (activation {a!r}, path length {L!r})")
        lce = max(lce, lmin)
        return tuple(lce if n == "fiber_length" else v for n, v in zip(self.state_names, z))


PARAMS = MillardParams
LAW = MillardLaw
