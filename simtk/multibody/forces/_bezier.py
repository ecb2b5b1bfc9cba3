"""OpenSim's muscle curves as segmented quintic Bézier curves, in scalars.

OpenSim 4.6 builds the curves of Millard2012EquilibriumMuscle (ActiveForceLengthCurve,
FiberForceLengthCurve, ForceVelocityCurve, ForceVelocityInverseCurve, TendonForceLengthCurve) as
a ``SmoothSegmentedFunction``: a chain of quintic Bézier "corner" sections, each fitted between two
points with given slopes, the curve extrapolated linearly outside its first and last points. Written
from the published construction (Millard et al. 2013 and OpenSim's SmoothSegmentedFunctionFactory):

- a corner between (x0, y0) with slope dydx0 and (x1, y1) with slope dydx1 meets at the lines'
  intersection C; its six control points are P0, P0 + c (C - P0) twice, P1 + c (C - P1) twice, P1,
  with the curviness c = 0.1 + 0.8 curviness;
- at x the section holding x is found, u solves x(u) = x (Newton, to 100 machine epsilons as
  OpenSim), and y = y(u), dy/dx = y'(u) / x'(u).

Everything is a function of floats (no arrays, no objects beyond the tuples of control points), so
the evaluation can become a compiled kernel unchanged.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

__all__: list[str] = []

_EPS = 2.220446049250313e-16
_ROOT_EPS = math.sqrt(_EPS)
#: OpenSim's tolerance on x(u) - x in the inverse of a section (SmoothSegmentedFunction's UTOL)
_UTOL = _EPS * 1e2


def _scale_curviness(c: float) -> float:
    return 0.1 + 0.8 * c


def corner(x0: float, y0: float, dydx0: float, x1: float, y1: float, dydx1: float, curviness: float,
           where: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The x and y control points of a C-shaped quintic Bézier corner (curviness already scaled)."""
    if not 0.0 <= curviness <= 1.0:
        raise ValueError(f"{where}: curviness {curviness!r} must be in [0, 1]")
    if abs(dydx0 - dydx1) > _ROOT_EPS:
        xc = (y1 - y0 - x1 * dydx1 + x0 * dydx0) / (dydx0 - dydx1)
    else:
        xc = (x1 + x0) / 2.0
    yc = (xc - x1) * dydx1 + y1
    a = (xc - x0) ** 2 + (yc - y0) ** 2
    b = (xc - x1) ** 2 + (yc - y1) ** 2
    c = (x1 - x0) ** 2 + (y1 - y0) ** 2
    if not (c > a and c > b):
        raise ValueError(f"{where}: the points ({x0}, {y0}) and ({x1}, {y1}) with slopes {dydx0}, {dydx1} do not "
                         "make a C-shaped corner")
    x0m, y0m = x0 + curviness * (xc - x0), y0 + curviness * (yc - y0)
    x1m, y1m = x1 + curviness * (xc - x1), y1 + curviness * (yc - y1)
    return (x0, x0m, x0m, x1m, x1m, x1), (y0, y0m, y0m, y1m, y1m, y1)


def _bezier(u: float, p: tuple[float, ...]) -> float:
    v = 1.0 - u
    u2, v2 = u * u, v * v
    return (v2 * v2 * v * p[0] + 5.0 * v2 * v2 * u * p[1] + 10.0 * v2 * v * u2 * p[2] + 10.0 * v2 * u2 * u * p[3]
            + 5.0 * v * u2 * u2 * p[4] + u2 * u2 * u * p[5])


def _bezier_du(u: float, p: tuple[float, ...]) -> float:
    v = 1.0 - u
    u2, v2 = u * u, v * v
    return 5.0 * (v2 * v2 * (p[1] - p[0]) + 4.0 * v2 * v * u * (p[2] - p[1]) + 6.0 * v2 * u2 * (p[3] - p[2])
                  + 4.0 * v * u2 * u * (p[4] - p[3]) + u2 * u2 * (p[5] - p[4]))


def _bezier_du2(u: float, p: tuple[float, ...]) -> float:
    v = 1.0 - u
    d = [p[i + 2] - 2.0 * p[i + 1] + p[i] for i in range(4)]
    return 20.0 * (v * v * v * d[0] + 3.0 * v * v * u * d[1] + 3.0 * v * u * u * d[2] + u * u * u * d[3])


def _solve_u(x: float, px: tuple[float, ...]) -> float:
    # x(u) increases on a section: Newton kept inside a shrinking bracket, bisecting when it leaves it
    lo, hi = 0.0, 1.0
    span = px[5] - px[0]
    u = (x - px[0]) / span if span > 0.0 else 0.5
    u = min(1.0, max(0.0, u))
    for _ in range(200):
        f = _bezier(u, px) - x
        if abs(f) <= _UTOL:
            return u
        if f > 0.0:
            hi = u
        else:
            lo = u
        d = _bezier_du(u, px)
        nxt = u - f / d if d > 0.0 else -1.0
        u = nxt if lo < nxt < hi else 0.5 * (lo + hi)
        if hi - lo <= _EPS:
            return u
    raise ArithmeticError(f"no Bézier parameter found for x = {x!r}")


@dataclass(frozen=True)
class Curve:
    """A SmoothSegmentedFunction: Bézier sections (x and y control points) on [x0, x1], linear outside."""

    px: tuple[tuple[float, ...], ...]
    py: tuple[tuple[float, ...], ...]
    x0: float
    x1: float
    y0: float
    y1: float
    dydx0: float
    dydx1: float

    def _section(self, x: float) -> tuple[int, float]:
        n = len(self.px)
        for i in range(n):
            if self.px[i][0] <= x < self.px[i][5]:
                return i, _solve_u(x, self.px[i])
        return n - 1, 1.0  # x == x1 (the callers handle x outside [x0, x1])

    def value(self, x: float) -> float:
        """y(x)."""
        return self.value_and_slope(x)[0]

    def slope(self, x: float) -> float:
        """dy/dx."""
        return self.value_and_slope(x)[1]

    def value_and_slope(self, x: float) -> tuple[float, float]:
        """(y, dy/dx) at x."""
        if x < self.x0:
            return self.y0 + self.dydx0 * (x - self.x0), self.dydx0
        if x > self.x1:
            return self.y1 + self.dydx1 * (x - self.x1), self.dydx1
        if not x == x:
            return math.nan, math.nan
        i, u = self._section(x)
        return _bezier(u, self.py[i]), _bezier_du(u, self.py[i]) / _bezier_du(u, self.px[i])

    def curvature(self, x: float) -> float:
        """d2y/dx2 (zero on the linear extrapolations)."""
        if x < self.x0 or x > self.x1:
            return 0.0
        i, u = self._section(x)
        dx, dy = _bezier_du(u, self.px[i]), _bezier_du(u, self.py[i])
        return (_bezier_du2(u, self.py[i]) * dx - dy * _bezier_du2(u, self.px[i])) / (dx * dx * dx)


def _curve(sections, x0, x1, y0, y1, dydx0, dydx1, inverse: bool = False) -> Curve:
    px = tuple(s[0] for s in sections)
    py = tuple(s[1] for s in sections)
    if inverse:
        return Curve(py, px, y0, y1, x0, x1, 1.0 / dydx0, 1.0 / dydx1)
    return Curve(px, py, x0, x1, y0, y1, dydx0, dydx1)


# ---------------------------------------------------------------------- OpenSim's curves
def active_force_length(min_norm_active_fiber_length: float, transition_norm_fiber_length: float,
                        max_norm_active_fiber_length: float, shallow_ascending_slope: float, minimum_value: float,
                        where: str = "ActiveForceLengthCurve") -> Curve:
    """OpenSim's ActiveForceLengthCurve (five corners; plateau at 1; curviness 1)."""
    x0, x1, x2, x3 = min_norm_active_fiber_length, transition_norm_fiber_length, 1.0, max_norm_active_fiber_length
    ylow, dydx = minimum_value, shallow_ascending_slope
    if not (x0 >= 0.0 and x1 > x0 + _ROOT_EPS and x2 > x1 + _ROOT_EPS and x3 > x2 + _ROOT_EPS):
        raise ValueError(f"{where}: needs 0 <= min_norm_active_fiber_length < transition_norm_fiber_length < 1 < "
                         f"max_norm_active_fiber_length, got {x0}, {x1}, {x3}")
    if not ylow >= 0.0:
        raise ValueError(f"{where}: minimum_value {ylow!r} must be >= 0")
    if not 0.0 <= dydx < (1.0 - ylow) / (x2 - x1):
        raise ValueError(f"{where}: shallow_ascending_slope {dydx!r} must be in [0, {(1.0 - ylow) / (x2 - x1)})")
    c = _scale_curviness(1.0)
    xdelta = 0.05 * x2
    xs = x2 - xdelta
    y0, dydx0 = 0.0, 0.0
    y1 = 1.0 - dydx * (xs - x1)
    dydx01 = 1.25 * (y1 - y0) / (x1 - x0)
    x01, y01 = x0 + 0.5 * (x1 - x0), y0 + 0.5 * (y1 - y0)
    x1s, y1s = x1 + 0.5 * (xs - x1), y1 + 0.5 * (1.0 - y1)
    y2, dydx2, y3, dydx3 = 1.0, 0.0, 0.0, 0.0
    x23 = (x2 + xdelta) + 0.5 * (x3 - (x2 + xdelta))
    y23 = y2 + 0.5 * (y3 - y2)
    dydx23 = (y3 - y2) / ((x3 - xdelta) - (x2 + xdelta))
    sections = [corner(x0, ylow, dydx0, x01, y01, dydx01, c, where),
                corner(x01, y01, dydx01, x1s, y1s, dydx, c, where),
                corner(x1s, y1s, dydx, x2, y2, dydx2, c, where),
                corner(x2, y2, dydx2, x23, y23, dydx23, c, where),
                corner(x23, y23, dydx23, x3, ylow, dydx3, c, where)]
    return _curve(sections, x0, x3, ylow, ylow, 0.0, 0.0)


def _force_velocity_sections(fmax_e, dydx_c, dydx_near_c, dydx_iso, dydx_e, dydx_near_e, conc_curviness,
                             ecc_curviness, where):
    for name, v in (("concentric_curviness", conc_curviness), ("eccentric_curviness", ecc_curviness)):
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"{where}: {name} {v!r} must be in [0, 1]")
    cc, ce = _scale_curviness(conc_curviness), _scale_curviness(ecc_curviness)
    xc, yc, xnc = -1.0, 0.0, -0.9
    ync = yc + 0.5 * dydx_near_c * (xnc - xc) + 0.5 * dydx_c * (xnc - xc)
    xe, ye, xne = 1.0, fmax_e, 0.9
    yne = ye + 0.5 * dydx_near_e * (xne - xe) + 0.5 * dydx_e * (xne - xe)
    return [corner(xc, yc, dydx_c, xnc, ync, dydx_near_c, cc, where),
            corner(xnc, ync, dydx_near_c, 0.0, 1.0, dydx_iso, cc, where),
            corner(0.0, 1.0, dydx_iso, xne, yne, dydx_near_e, ce, where),
            corner(xne, yne, dydx_near_e, xe, ye, dydx_e, ce, where)]


def force_velocity(concentric_slope_at_vmax: float, concentric_slope_near_vmax: float, isometric_slope: float,
                   eccentric_slope_at_vmax: float, eccentric_slope_near_vmax: float,
                   max_eccentric_velocity_force_multiplier: float, concentric_curviness: float,
                   eccentric_curviness: float, where: str = "ForceVelocityCurve") -> Curve:
    """OpenSim's ForceVelocityCurve: f_V of the normalized fiber velocity on [-1, 1]."""
    fe = max_eccentric_velocity_force_multiplier
    checks = ((fe > 1.0, "max_eccentric_velocity_force_multiplier must be greater than 1"),
              (0.0 <= concentric_slope_at_vmax < 1.0, "concentric_slope_at_vmax must be in [0, 1)"),
              (concentric_slope_at_vmax < concentric_slope_near_vmax <= 1.0,
               "concentric_slope_near_vmax must be in (concentric_slope_at_vmax, 1]"),
              (isometric_slope > 1.0, "isometric_slope must be greater than 1"),
              (0.0 <= eccentric_slope_at_vmax < fe - 1.0,
               "eccentric_slope_at_vmax must be in [0, max_eccentric_velocity_force_multiplier - 1)"),
              (eccentric_slope_at_vmax <= eccentric_slope_near_vmax < fe - 1.0,
               "eccentric_slope_near_vmax must be in [eccentric_slope_at_vmax, "
               "max_eccentric_velocity_force_multiplier - 1)"))
    for ok, why in checks:
        if not ok:
            raise ValueError(f"{where}: {why}")
    s = _force_velocity_sections(fe, concentric_slope_at_vmax, concentric_slope_near_vmax, isometric_slope,
                                 eccentric_slope_at_vmax, eccentric_slope_near_vmax, concentric_curviness,
                                 eccentric_curviness, where)
    return _curve(s, -1.0, 1.0, 0.0, fe, concentric_slope_at_vmax, eccentric_slope_at_vmax)


def force_velocity_inverse(concentric_slope_at_vmax: float, concentric_slope_near_vmax: float,
                           isometric_slope: float, eccentric_slope_at_vmax: float, eccentric_slope_near_vmax: float,
                           max_eccentric_velocity_force_multiplier: float, concentric_curviness: float,
                           eccentric_curviness: float, where: str = "ForceVelocityInverseCurve") -> Curve:
    """OpenSim's ForceVelocityInverseCurve: the normalized fiber velocity of f_V (the force-velocity
    curve's sections with x and y swapped; its end slopes must be nonzero)."""
    fe = max_eccentric_velocity_force_multiplier
    sig = _EPS ** 0.875
    checks = ((fe > 1.0, "max_eccentric_velocity_force_multiplier must be greater than 1"),
              (sig < concentric_slope_at_vmax < 1.0, "concentric_slope_at_vmax must be in (0, 1)"),
              (concentric_slope_at_vmax < concentric_slope_near_vmax < 1.0,
               "concentric_slope_near_vmax must be in (concentric_slope_at_vmax, 1)"),
              (isometric_slope > 1.0, "isometric_slope must be greater than 1"),
              (sig < eccentric_slope_at_vmax < fe - 1.0,
               "eccentric_slope_at_vmax must be in (0, max_eccentric_velocity_force_multiplier - 1)"),
              (eccentric_slope_at_vmax <= eccentric_slope_near_vmax < fe - 1.0,
               "eccentric_slope_near_vmax must be in [eccentric_slope_at_vmax, "
               "max_eccentric_velocity_force_multiplier - 1)"))
    for ok, why in checks:
        if not ok:
            raise ValueError(f"{where}: {why}")
    s = _force_velocity_sections(fe, concentric_slope_at_vmax, concentric_slope_near_vmax, isometric_slope,
                                 eccentric_slope_at_vmax, eccentric_slope_near_vmax, concentric_curviness,
                                 eccentric_curviness, where)
    return _curve(s, -1.0, 1.0, 0.0, fe, concentric_slope_at_vmax, eccentric_slope_at_vmax, inverse=True)


def fiber_force_length(strain_at_zero_force: float, strain_at_one_norm_force: float,
                       stiffness_at_low_force: float | None = None, stiffness_at_one_norm_force: float | None = None,
                       curviness: float | None = None, where: str = "FiberForceLengthCurve") -> Curve:
    """OpenSim's FiberForceLengthCurve (the optional properties all given or all None: then
    OpenSim's fitted values 0.2, 2/(e1 - e0), 0.75)."""
    e0, e1 = strain_at_zero_force, strain_at_one_norm_force
    given = [v is not None for v in (stiffness_at_low_force, stiffness_at_one_norm_force, curviness)]
    if any(given) and not all(given):
        raise ValueError(f"{where}: stiffness_at_low_force, stiffness_at_one_norm_force and curviness must be all "
                         "given or all left out")
    if not e1 > e0:
        raise ValueError(f"{where}: strain_at_one_norm_force must be greater than strain_at_zero_force")
    klow = 0.2 if stiffness_at_low_force is None else stiffness_at_low_force
    kiso = 2.0 / (e1 - e0) if stiffness_at_one_norm_force is None else stiffness_at_one_norm_force
    curv = 0.75 if curviness is None else curviness
    if not kiso > 1.0 / (e1 - e0):
        raise ValueError(f"{where}: stiffness_at_one_norm_force must be greater than {1.0 / (e1 - e0)}")
    if not 0.0 < klow < 1.0 / (e1 - e0):
        raise ValueError(f"{where}: stiffness_at_low_force must be in (0, {1.0 / (e1 - e0)})")
    if not 0.0 <= curv <= 1.0:
        raise ValueError(f"{where}: curviness {curv!r} must be in [0, 1]")
    c = _scale_curviness(curv)
    xzero, xiso = 1.0 + e0, 1.0 + e1
    dx = min(0.1 * (1.0 / kiso), 0.1 * (xiso - xzero))
    xlow = xzero + dx
    xfoot = xzero + 0.5 * (xlow - xzero)
    ylow = klow * (xlow - xfoot)
    s = [corner(xzero, 0.0, 0.0, xlow, ylow, klow, c, where), corner(xlow, ylow, klow, xiso, 1.0, kiso, c, where)]
    return _curve(s, xzero, xiso, 0.0, 1.0, 0.0, kiso)


def tendon_force_length(strain_at_one_norm_force: float, stiffness_at_one_norm_force: float | None = None,
                        norm_force_at_toe_end: float | None = None, curviness: float | None = None,
                        where: str = "TendonForceLengthCurve") -> Curve:
    """OpenSim's TendonForceLengthCurve (the optional properties all given or all None: then
    OpenSim's fitted values 1.375/e_iso, 2/3, 0.5)."""
    e_iso = strain_at_one_norm_force
    given = [v is not None for v in (stiffness_at_one_norm_force, norm_force_at_toe_end, curviness)]
    if any(given) and not all(given):
        raise ValueError(f"{where}: stiffness_at_one_norm_force, norm_force_at_toe_end and curviness must be all "
                         "given or all left out")
    if not e_iso > 0.0:
        raise ValueError(f"{where}: strain_at_one_norm_force {e_iso!r} must be greater than 0")
    kiso = 1.375 / e_iso if stiffness_at_one_norm_force is None else stiffness_at_one_norm_force
    ftoe = 2.0 / 3.0 if norm_force_at_toe_end is None else norm_force_at_toe_end
    curv = 0.5 if curviness is None else curviness
    if not 0.0 < ftoe < 1.0:
        raise ValueError(f"{where}: norm_force_at_toe_end {ftoe!r} must be in (0, 1)")
    if not kiso > 1.0 / e_iso:
        raise ValueError(f"{where}: stiffness_at_one_norm_force {kiso!r} must be greater than {1.0 / e_iso}")
    if not 0.0 <= curv <= 1.0:
        raise ValueError(f"{where}: curviness {curv!r} must be in [0, 1]")
    c = _scale_curviness(curv)
    xiso = 1.0 + e_iso
    xtoe = (ftoe - 1.0) / kiso + xiso
    xfoot, yfoot = 1.0 + (xtoe - 1.0) / 10.0, 0.0
    ytoemid = ftoe * 0.5
    xtoemid = (ytoemid - 1.0) / kiso + xiso
    dydx_toemid = (ytoemid - yfoot) / (xtoemid - xfoot)
    xctrl = xfoot + 0.5 * (xtoemid - xfoot)
    yctrl = yfoot + dydx_toemid * (xctrl - xfoot)
    s = [corner(1.0, 0.0, 0.0, xctrl, yctrl, dydx_toemid, c, where),
         corner(xctrl, yctrl, dydx_toemid, xtoe, ftoe, kiso, c, where)]
    return _curve(s, 1.0, xtoe, 0.0, ftoe, 0.0, kiso)
