"""The Thelen (2003) muscle-tendon law as OpenSim 4.6 defines it (Thelen2003Muscle with its
MuscleFirstOrderActivationDynamicModel and MuscleFixedWidthPennationModel), in scalars.

Written from OpenSim's published equations so that the same state gives the same numbers:
- activation: da/dt = (e - a~)/tau, a~ = clamp(a, a_min, 1), tau = tau_act (0.5 + 1.5 a~) when
  e > a~ else tau_deact / (0.5 + 1.5 a~) (Thelen's form, as OpenSim 4.6 evaluates it);
- pennation at constant parallelogram height h = l_opt sin(phi_opt): sin(phi) = h / l_M, the fiber
  length clamped below at h / sin(phi_max) (1% of l_opt for phi_max = 0);
- active force-length exp(-(l~ - 1)^2 / kshape_active), passive (exp(k_pe (l~ - 1)/e0_M) - 1)/(exp(k_pe)
  - 1) for l~ > 1, tendon: an exponential toe to strain e_toe then linear (OpenSim's exact e_toe, k_lin);
- the fiber velocity is Thelen's force-velocity curve (his Eqs. 6, 7, linearly extrapolated past the
  thresholds) evaluated at a f_L f_V = f_SE / cos(phi) - f_PE: an equilibrium of fiber and tendon;
- the equilibrium initialization is OpenSim's ``initMuscleState`` (a damped Newton iteration on the
  fiber length, the lengthening speed shared between fiber and tendon by their stiffnesses).
Nothing here knows about States. The element evaluates the law through its compiled kind
(``core/muscles.pxi``, the same equations in the same order); this module is that kernel's test
oracle, and gives the equilibrium initialization (``equilibrium``, run once before a simulation).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ._muscle import MuscleInfo, first_order_activation_rate

__all__: list[str] = []

_EPS = 2.220446049250313e-16
_SIGNIFICANT = 2.220446049250313e-16 ** 0.875  # SimTK::SignificantReal
_SQRT_EPS = math.sqrt(_EPS)
_E3 = math.exp(3.0)


@dataclass(frozen=True)
class ThelenParams:
    """A Thelen2003Muscle's properties (OpenSim's names and defaults)."""

    max_isometric_force: float
    optimal_fiber_length: float
    tendon_slack_length: float
    pennation_angle_at_optimal: float = 0.0
    max_contraction_velocity: float = 10.0
    FmaxTendonStrain: float = 0.04
    FmaxMuscleStrain: float = 0.6
    KshapeActive: float = 0.45
    KshapePassive: float = 5.0
    Af: float = 0.25
    Flen: float = 1.4
    fv_linear_extrap_threshold: float = 0.95
    maximum_pennation_angle: float = math.acos(0.1)
    activation_time_constant: float = 0.015
    deactivation_time_constant: float = 0.050
    minimum_activation: float = 0.01

    @property
    def height(self) -> float:
        return self.optimal_fiber_length * math.sin(self.pennation_angle_at_optimal)

    @property
    def min_fiber_length(self) -> float:
        if self.maximum_pennation_angle > _SIGNIFICANT:
            return self.height / math.sin(self.maximum_pennation_angle)
        return 0.01 * self.optimal_fiber_length


def check(p: ThelenParams, where: str) -> None:
    """Refuse properties OpenSim refuses (naming ``where``), before anything is built."""
    def bad(name: str, why: str):
        raise ValueError(f"{where}: {name} = {getattr(p, name)!r}: {why}")
    for name in ("max_isometric_force", "optimal_fiber_length", "tendon_slack_length", "max_contraction_velocity",
                 "FmaxTendonStrain", "FmaxMuscleStrain", "KshapeActive", "KshapePassive", "Af",
                 "activation_time_constant", "deactivation_time_constant"):
        v = getattr(p, name)
        if not (isinstance(v, float) and math.isfinite(v) and v > 0.0):
            bad(name, "must be a finite number greater than zero")
    if not p.Flen > 1.0:
        bad("Flen", "must be greater than 1")
    if not p.fv_linear_extrap_threshold > 1.0 / p.Flen:
        bad("fv_linear_extrap_threshold", "must be greater than 1/Flen")
    if not 0.0 <= p.pennation_angle_at_optimal <= math.pi / 2 - _SIGNIFICANT:
        bad("pennation_angle_at_optimal", "must be in [0, pi/2)")
    if not 0.0 <= p.maximum_pennation_angle <= math.pi / 2:
        bad("maximum_pennation_angle", "must be in [0, pi/2]")
    if not 0.01 <= p.minimum_activation < 1.0:
        bad("minimum_activation", "must be in [0.01, 1) (OpenSim's lower bound)")


# ---------------------------------------------------------------------- curves
def fal(p: ThelenParams, lceN: float) -> float:
    return math.exp(-(lceN - 1.0) * (lceN - 1.0) / p.KshapeActive)


def dfal(p: ThelenParams, lceN: float) -> float:
    t = lceN - 1.0
    return -2.0 * t / p.KshapeActive * math.exp(-t * t / p.KshapeActive)


def fpe(p: ThelenParams, lceN: float) -> float:
    if lceN > 1.0:
        return (math.exp(p.KshapePassive * (lceN - 1.0) / p.FmaxMuscleStrain) - 1.0) / (math.exp(p.KshapePassive) - 1.0)
    return 0.0


def dfpe(p: ThelenParams, lceN: float) -> float:
    if lceN > 1.0:
        k, e0 = p.KshapePassive, p.FmaxMuscleStrain
        return k / e0 * math.exp(k * (lceN - 1.0) / e0) / (math.exp(k) - 1.0)
    return 0.0


def _toe(p: ThelenParams) -> tuple[float, float]:
    e0 = p.FmaxTendonStrain
    e_toe = 99.0 * e0 * _E3 / (166.0 * _E3 - 67.0)
    return e_toe, 0.67 / (e0 - e_toe)


def fse(p: ThelenParams, tlN: float) -> float:
    x = tlN - 1.0
    e_toe, klin = _toe(p)
    if x > e_toe:
        return klin * (x - e_toe) + 0.33
    if x > 0.0:
        return 0.33 / (math.exp(3.0) - 1.0) * (math.exp(3.0 * x / e_toe) - 1.0)
    return 0.0


def dfse(p: ThelenParams, tlN: float) -> float:
    x = tlN - 1.0
    e_toe, klin = _toe(p)
    if x > e_toe:
        return klin
    if x > 0.0:
        return 0.33 / (math.exp(3.0) - 1.0) * (3.0 / e_toe) * math.exp(3.0 * x / e_toe)
    return 0.0


def _fv_branch(p: ThelenParams, a: float, afl: float, Fm: float) -> tuple[float, float, float, bool]:
    # (b, db/dFm, Fm0, inside): Thelen's Eq. 7 denominator at Fm, or at the threshold it is extrapolated from
    af, flen = p.Af, p.Flen
    asy_e = afl * flen
    if 0.0 < Fm < asy_e * p.fv_linear_extrap_threshold:
        if Fm <= afl:
            return afl + Fm / af, 1.0 / af, Fm, True
        return (2.0 + 2.0 / af) * (afl * flen - Fm) / (flen - 1.0), (2.0 + 2.0 / af) * -1.0 / (flen - 1.0), Fm, True
    if Fm <= 0.0:
        return afl + 0.0 / af, 1.0 / af, 0.0, False
    Fm0 = p.fv_linear_extrap_threshold * asy_e
    return (2.0 + 2.0 / af) * (afl * flen - Fm0) / (flen - 1.0), (2.0 + 2.0 / af) * -1.0 / (flen - 1.0), Fm0, False


def dlceN_of(p: ThelenParams, a: float, fal_: float, a_fal_fv: float) -> float:
    """Thelen's normalized fiber velocity (per l_opt v_max) at the active force a f_L f_V."""
    afl = a * fal_
    b, db, Fm0, inside = _fv_branch(p, a, afl, a_fal_fv)
    c = 0.25 + 0.75 * a
    if inside:
        return c * (a_fal_fv - afl) / b
    slope = c / b - (c * (Fm0 - afl) / (b * b)) * db
    return c * (Fm0 - afl) / b + slope * (a_fal_fv - Fm0)


def ddlceN_of(p: ThelenParams, a: float, fal_: float, a_fal_fv: float) -> float:
    afl = a * fal_
    b, db, Fm0, _ = _fv_branch(p, a, afl, a_fal_fv)
    c = 0.25 + 0.75 * a
    return c / b - (c * (Fm0 - afl) / (b * b)) * db


def fv_inverse(p: ThelenParams, a: float, fal_: float, dlceN: float, tol: float, max_iter: int, where: str) -> float:
    """f_V at normalized fiber velocity ``dlceN`` (OpenSim's calcfvInv: Newton on a f_L f_V from 1)."""
    err = 1.0
    x = a * fal_
    it = 0
    while abs(err) >= tol and it < max_iter:
        err = dlceN_of(p, a, fal_, x) - dlceN
        d = ddlceN_of(p, a, fal_, x)
        if abs(d) > _SIGNIFICANT:
            x -= err / d
        it += 1
    if abs(err) < tol:
        return max(0.0, x / (a * fal_))
    raise ArithmeticError(f"{where}: the force-velocity inverse did not converge (velocity {dlceN!r})")


# ---------------------------------------------------------------------- the muscle at a state
def pennation(p: ThelenParams, lce: float) -> float:
    if p.pennation_angle_at_optimal > _EPS:
        if lce > p.min_fiber_length:
            s = p.height / lce
            return math.asin(s) if s < math.sin(p.maximum_pennation_angle) else p.maximum_pennation_angle
        return p.maximum_pennation_angle
    return 0.0


def clamp_activation(p: ThelenParams, a: float) -> float:
    return min(1.0, max(p.minimum_activation, a))


def activation_rate(p: ThelenParams, a: float, e: float) -> float:
    return first_order_activation_rate(a, e, p.activation_time_constant, p.deactivation_time_constant,
                                       p.minimum_activation)


def evaluate(p: ThelenParams, a_state: float, lce_state: float, L: float, Ldot: float) -> MuscleInfo:
    """The muscle at activation and fiber-length states ``a_state``, ``lce_state`` and path length
    and lengthening speed ``L``, ``Ldot`` (OpenSim's calcMuscleLengthInfo, calcFiberVelocityInfo,
    calcMuscleDynamicsInfo)."""
    fiso, ofl = p.max_isometric_force, p.optimal_fiber_length
    lce = max(p.min_fiber_length, lce_state)
    lceN = lce / ofl
    phi = pennation(p, lce)
    cosphi, sinphi = math.cos(phi), math.sin(phi)
    tl = L - lce * cosphi
    f_al, f_pe = fal(p, lceN), fpe(p, lceN)
    a = clamp_activation(p, a_state)
    f_se = fse(p, tl / p.tendon_slack_length)
    afalfv = f_se / cosphi - f_pe
    fv = afalfv / (a * f_al)
    dlceN = dlceN_of(p, a, f_al, afalfv)
    dlce = dlceN * p.max_contraction_velocity * ofl
    dphi = -(dlce / lce) * math.tan(phi) if p.pennation_angle_at_optimal > _EPS else 0.0
    dtl = Ldot - dlce * cosphi + lce * sinphi * dphi
    clamped = lce_state <= p.min_fiber_length and dlceN <= 0.0
    if clamped:
        dlce, dtl, fv = 0.0, Ldot, 1.0
        Fm = aFm = 0.0
    else:
        aFm = a * f_al * fv * fiso
        Fm = (a * f_al * fv + f_pe) * fiso
    return MuscleInfo(a, lce, phi, tl, dlce, dtl, f_al, f_pe, fv, Fm, aFm, f_pe * fiso, f_se * fiso, clamped)


def _dFm_dlce(p: ThelenParams, lce: float, a: float, fv: float) -> float:
    lceN = lce / p.optimal_fiber_length
    return (a * fv * dfal(p, lceN) + dfpe(p, lceN)) * p.max_isometric_force / p.optimal_fiber_length


def _ieee_div(a: float, b: float) -> float:
    """a / b as C++ computes it: 0/0 is NaN and x/0 an infinity, not an exception. OpenSim's Newton
    search for the fiber equilibrium divides by the fiber length, which is 0 for an unpennated fiber
    pressed to its minimum; its NaN then stops the search at the fiber's lower bound."""
    if b != 0.0:
        return a / b
    if a == 0.0 or a != a:
        return math.nan
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


def _sign(x: float) -> float:
    """SimTK::sign: 1, -1, or 0 (also for NaN)."""
    return 1.0 if x > 0.0 else (-1.0 if x < 0.0 else 0.0)


def _dFmAT_dlce(lce: float, cosphi: float, Fm: float, dFm: float, h: float) -> float:
    h2, l2 = h * h, lce * lce
    inside = 1.0 - _ieee_div(h2, l2)
    return dFm * cosphi + Fm * _ieee_div(h2, l2 * lce * (math.sqrt(inside) if inside >= 0.0 else math.nan))


def _dFse_dlce(p: ThelenParams, tl: float, lce: float, phi: float, vol: float) -> float:
    r = _ieee_div(vol, lce)
    inside = 1.0 - r * r
    dphi = _ieee_div(-vol, lce * lce * (math.sqrt(inside) if inside >= 0.0 else math.nan))
    dtl = -math.cos(phi) + lce * math.sin(phi) * dphi
    return dfse(p, tl / p.tendon_slack_length) * dtl * (p.max_isometric_force / p.tendon_slack_length)


def _fiber_length_from(p: ThelenParams, L: float, tl: float) -> float:
    along = L - tl
    h = p.height
    if along >= p.min_fiber_length * math.cos(p.maximum_pennation_angle):
        return math.sqrt(h * h + along * along)
    return p.min_fiber_length


def equilibrium(p: ThelenParams, a: float, L: float, Ldot: float, where: str) -> tuple[float, float]:
    """(fiber length, tendon force) in equilibrium at activation ``a``, path length ``L`` and speed
    ``Ldot`` (OpenSim's Thelen2003Muscle::computeInitialFiberEquilibrium and initMuscleState).
    Raises ArithmeticError naming ``where`` when it finds none."""
    fiso, ofl, tsl = p.max_isometric_force, p.optimal_fiber_length, p.tendon_slack_length
    a = clamp_activation(p, a)
    tol = max(1e-8 * fiso, _SIGNIFICANT * 10.0)
    max_iter = 20
    vol = ofl * math.sin(p.pennation_angle_at_optimal)
    vmax = p.max_contraction_velocity
    lmin = p.min_fiber_length
    s: dict = {}
    s["tl"] = tsl * 1.01
    s["lce"] = _fiber_length_from(p, L, s["tl"])

    def position():
        s["phi"] = pennation(p, s["lce"])
        s["cosphi"] = math.cos(s["phi"])
        s["tl"] = L - s["lce"] * s["cosphi"]
        s["lceN"] = s["lce"] / ofl
        s["tlN"] = s["tl"] / tsl

    def multipliers():
        s["fse"], s["fal"], s["fpe"] = fse(p, s["tlN"]), fal(p, s["lceN"]), fpe(p, s["lceN"])

    def force_error():
        s["Fm"] = (a * s["fal"] * s["fv"] + s["fpe"]) * fiso
        s["ferr"] = s["Fm"] * s["cosphi"] - s["fse"] * fiso

    def partials():
        dFm = _dFm_dlce(p, s["lce"], a, s["fv"])
        s["dFmAT_dlce"] = _dFmAT_dlce(s["lce"], s["cosphi"], s["Fm"], dFm, vol)
        s["dFmAT_dlceAT"] = s["dFmAT_dlce"] * s["cosphi"]
        s["dFt_dtl"] = dfse(p, s["tl"] / tsl) * fiso / tsl
        s["dFt_dlce"] = _dFse_dlce(p, s["tl"], s["lce"], s["phi"], vol)

    def velocity():
        k = s["dFmAT_dlceAT"] + s["dFt_dtl"]
        dtl = (s["dFmAT_dlceAT"] / k) * Ldot if abs(k) > _SIGNIFICANT and s["tl"] > tsl else Ldot
        dlceN = (Ldot - dtl) * s["cosphi"] / (vmax * ofl)
        s["fv"] = fv_inverse(p, a, s["fal"], dlceN, tol, 100, where)

    s["Fm"] = 0.0
    position()
    multipliers()
    s["fv"] = 1.0
    partials()
    velocity()
    force_error()
    partials()
    ferr_prev, lce_prev = s["ferr"], s["lce"]
    it = 0
    while abs(s["ferr"]) > tol and it < max_iter:
        slope = s["dFmAT_dlce"] - s["dFt_dlce"]
        h = 1.0
        while abs(s["ferr"]) >= abs(ferr_prev):
            step = _ieee_div(-h * ferr_prev, slope)
            if abs(step) > _SIGNIFICANT:
                s["lce"] = lce_prev + step
            else:
                s["lce"] = lce_prev - _sign(step) * _SQRT_EPS
                h = 0.0
            if s["lce"] < lmin:
                s["lce"] = lmin
            position()
            multipliers()
            force_error()
            if h <= _SQRT_EPS:
                break
            h *= 0.5
        ferr_prev, lce_prev = s["ferr"], s["lce"]
        partials()
        velocity()
        it += 1
    if abs(s["ferr"]) < tol:
        return s["lce"], s["fse"] * fiso
    if s["lce"] <= lmin:
        lce = lmin
        cosphi = math.cos(pennation(p, lce))
        return lce, fse(p, (L - lce * cosphi) / tsl) * fiso
    raise ArithmeticError(f"{where}: no equilibrium fiber length found: force error {abs(s['ferr'])!r} N after "
                          f"{max_iter} Newton iterations (activation {a!r}, path length {L!r})")
