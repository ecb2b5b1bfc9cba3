"""The embedded error estimates against their definitions: consistency conditions and convergence rate.

The solution order of each method is tested elsewhere (fixed-step convergence); an estimate whose
weights still sum to zero but are otherwise wrong (two of them swapped) leaves the solution intact
and only makes step-size control meaningless. So here, for every embedded pair:

- the error weights ``e = b - b_hat`` satisfy the order conditions of the lower member with zero
  on the right (they are the difference of two methods that both satisfy them): ``sum e = 0``, and
  for a lower member of order >= 2 ``sum e c = 0``, and so on up to its order;
- the local error estimate of one step scales as ``h**(p+1)``, ``p`` the lower member's order,
  measured by halving h on smooth problems, both with the tableau alone and through the
  integrator's own step (which also covers Verlet's and semi-explicit Euler's estimates, which
  have no tableau).
"""
from __future__ import annotations

import math
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from systems import oscillator_system  # noqa: E402

from simtk.math import (  # noqa: E402
    ExplicitEulerIntegrator,
    RungeKutta2Integrator,
    RungeKutta3Integrator,
    RungeKuttaFeldbergIntegrator,
    RungeKuttaMersonIntegrator,
    SemiExplicitEuler2Integrator,
    VerletIntegrator,
)
from simtk.multibody import (  # noqa: E402
    Force,
    GeneralForceSubsystem,
    MobilizedBody,
    MultibodySystem,
    SimbodyMatterSubsystem,
)
from simtk.spatial import Body, Inertia, MassProperties, Transform  # noqa: E402

#: (method, order of the lower member of its embedded pair): the estimate is O(h**(order + 1)) on
#: any smooth problem. Merson's lower member is third order; its estimate is built to be O(h**5)
#: on linear problems with constant coefficients only (its declared _error_order, tested apart).
TABLEAUS = [
    (ExplicitEulerIntegrator, 1),
    (RungeKutta2Integrator, 1),
    (RungeKutta3Integrator, 2),
    (RungeKuttaMersonIntegrator, 3),
    (RungeKuttaFeldbergIntegrator, 4),
]


# ------------------------------------------------------------------------------------- order conditions
def _exact(values) -> list[Fraction]:
    # The tables are built from Fractions rounded to float: the nearest simple fraction recovers them,
    # so that the conditions are checked exactly.
    return [Fraction(float(v)).limit_denominator(10 ** 7) for v in values]


def _order_conditions(c, A, p: int) -> list[tuple[str, list[Fraction]]]:
    """The vectors ``phi`` of the order conditions ``sum_i w_i phi_i = 1/gamma`` of orders 1..p (p <= 4),
    with their names: a method of order p has weights w satisfying all of them."""
    s = len(c)

    def Adot(v):
        return [sum((A[i][j] * v[j] for j in range(i)), Fraction(0)) for i in range(s)]

    one = [Fraction(1)] * s
    c2 = [x * x for x in c]
    conds = [("1", one)]
    if p >= 2:
        conds.append(("c", list(c)))
    if p >= 3:
        conds += [("c^2", c2), ("A c", Adot(c))]
    if p >= 4:
        Ac = Adot(c)
        conds += [("c^3", [x ** 3 for x in c]), ("c A c", [x * y for x, y in zip(c, Ac)]),
                  ("A c^2", Adot(c2)), ("A A c", Adot(Ac))]
    return conds


@pytest.mark.parametrize("cls,lower", TABLEAUS, ids=lambda v: getattr(v, "__name__", str(v)))
def test_error_weights_meet_the_lower_members_order_conditions_with_zero(cls, lower):
    """Kills the swap of two error weights of RK3 (their sum stays 0, but ``sum e c`` does not: every
    swap of two weights at different nodes changes it by (e_i - e_j)(c_j - c_i))."""
    c = _exact(cls._c)
    A = [_exact(row) for row in cls._A]
    e = _exact(cls._e)
    for name, phi in _order_conditions(c, A, lower):
        value = sum((w * f for w, f in zip(e, phi)), Fraction(0))
        assert value == 0, f"{cls.__name__}: sum e_i ({name})_i = {value}, not 0"


@pytest.mark.parametrize("cls,lower", [m for m in TABLEAUS if m[1] < 4], ids=lambda v: getattr(v, "__name__", str(v)))
def test_the_error_estimate_is_not_of_higher_order_than_declared(cls, lower):
    """The lower member's order is exact: its weights fail an order condition of the next order (an
    estimate that vanished to one order more would be a table transcribed wrongly as well). Conditions
    of order 5 are not enumerated here: Fehlberg's exact rate is measured below."""
    c = _exact(cls._c)
    A = [_exact(row) for row in cls._A]
    e = _exact(cls._e)
    conds = _order_conditions(c, A, lower + 1)[len(_order_conditions(c, A, lower)):]
    values = [sum((w * f for w, f in zip(e, phi)), Fraction(0)) for _, phi in conds]
    assert any(v != 0 for v in values), f"{cls.__name__}: the estimate satisfies the order {lower + 1} conditions"


# ------------------------------------------------------------------------------------- rate: tableau alone
def _forced_pendulum(t: float, y: np.ndarray) -> np.ndarray:
    """A smooth, nonlinear, non-autonomous test problem (every node c_i matters)."""
    return np.array([y[1], -math.sin(y[0]) + 0.5 * math.cos(1.3 * t), -y[0] * y[2] / (1.0 + t)])


def _linear(t: float, y: np.ndarray) -> np.ndarray:
    return np.array([y[1], -4.0 * y[0] - 0.3 * y[1], 0.5 * y[0] - y[2]])


def _tableau_estimate(cls, f, t0: float, y0: np.ndarray, h: float) -> np.ndarray:
    c, A, e = cls._c, cls._A, cls._e
    K = []
    for i in range(len(c)):
        y = y0 + h * sum((A[i][j] * K[j] for j in range(i)), np.zeros_like(y0))
        K.append(f(t0 + c[i] * h, y))
    return h * sum(ei * k for ei, k in zip(e, K))


def _rates(estimates: list[float]) -> list[float]:
    return [math.log2(estimates[i] / estimates[i + 1]) for i in range(len(estimates) - 1)]


#: how far a measured rate may be from its exact asymptotic value at these step sizes (the next term
#: of the expansion, one power of h higher, shifts log2 of the ratio by O(h)); a wrong weight changes
#: the rate by a whole unit
RATE_SLACK = 0.3


@pytest.mark.parametrize("cls,lower", TABLEAUS, ids=lambda v: getattr(v, "__name__", str(v)))
def test_tableau_estimate_converges_at_the_lower_members_order_plus_one(cls, lower):
    t0, y0 = 0.3, np.array([0.8, -0.4, 1.2])
    hs = [0.04 / 2 ** k for k in range(4)]
    est = [float(np.linalg.norm(_tableau_estimate(cls, _forced_pendulum, t0, y0, h))) for h in hs]
    rates = _rates(est)
    assert all(abs(r - (lower + 1)) <= RATE_SLACK for r in rates), (
        f"{cls.__name__}: the estimate converges at rates {rates}, expected {lower + 1}")


def test_mersons_estimate_is_fifth_order_on_linear_problems():
    """Merson's declared error order (4: an O(h**5) estimate) holds for linear constant-coefficient
    problems, which it was designed for."""
    cls = RungeKuttaMersonIntegrator
    y0 = np.array([0.8, -0.4, 1.2])
    hs = [0.04 / 2 ** k for k in range(4)]
    est = [float(np.linalg.norm(_tableau_estimate(cls, _linear, 0.0, y0, h))) for h in hs]
    rates = _rates(est)
    assert all(abs(r - (cls._error_order + 1)) <= RATE_SLACK for r in rates), rates


# ------------------------------------------------------------------------------------- rate: integrator's step
def _double_pendulum():
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    body = Body.Rigid(MassProperties.from_central_inertia(1.0, [0, -0.25, 0], Inertia([0.02, 0.001, 0.02])))
    first = MobilizedBody.Pin(matter.ground, Transform(), body, Transform())
    MobilizedBody.Pin(first, Transform([0, -0.5, 0]), body, Transform())
    state = system.realize_topology()
    state.set_q([0.7, -0.4])
    state.set_u([0.5, 1.1])
    return system, state


#: every integrator with an error estimate, the exponent of h in its local error estimate on a
#: smooth nonlinear problem (Verlet's after a step, when its second difference has a previous step;
#: on an interval's first step its velocity estimate is the first-order bound h/2 |udot1 - udot0|),
#: and the largest step of the measurement: small enough for the leading term to dominate on the
#: double pendulum (RK3's rates come down from 4.4 at 0.04 to 3.0 at 0.005), large enough for
#: round-off to stay far below the estimate (Fehlberg's is 1e-12 at 0.005)
ESTIMATE_RATES = [
    (ExplicitEulerIntegrator, 2, 0.005),
    (RungeKutta2Integrator, 2, 0.005),
    (RungeKutta3Integrator, 3, 0.005),
    (RungeKuttaMersonIntegrator, 4, 0.005),
    (RungeKuttaFeldbergIntegrator, 5, 0.02),
    (VerletIntegrator, 3, 0.005),
    (SemiExplicitEuler2Integrator, 2, 0.005),
]


def _step_estimates(integ, state, hs: list[float], warm_up: float = 0.01) -> list[float]:
    """The norm of the integrator's own error estimate for one step of each size in ``hs``, all from the
    same start (reached by one step of ``warm_up``, so that Verlet has its previous step)."""
    integ.set_use_compiled_loop(False)  # the estimate of the Python path's step (the compiled one is its twin)
    integ.set_fixed_step_size(warm_up)
    integ.initialize(state)
    integ.step_to(warm_up)
    t0 = integ.get_time()
    out = []
    for h in hs:
        assert integ._attempt_step(t0 + h)
        out.append(float(np.linalg.norm(integ._err)))
        integ._restore_start()
    return out


@pytest.mark.parametrize("cls,rate,h0", ESTIMATE_RATES, ids=lambda v: getattr(v, "__name__", str(v)))
def test_integrators_step_estimate_converges_at_its_rate(cls, rate, h0):
    """The estimate the integrator computes in its step (on a double pendulum) is O(h**rate); for each
    method but Merson's (see above) that rate is the declared error order + 1."""
    system, state = _double_pendulum()
    integ = cls(system)
    if cls is not RungeKuttaMersonIntegrator:
        assert rate == integ.get_method_min_order() + 1
    rates = _rates(_step_estimates(integ, state, [h0 / 2 ** k for k in range(3)]))
    assert all(abs(r - rate) <= RATE_SLACK for r in rates), f"{cls.__name__}: rates {rates}, expected {rate}"


def test_mersons_step_estimate_is_fifth_order_on_the_oscillator():
    system, _ = oscillator_system(omega=2.0, q0=1.0, u0=0.5)
    integ = RungeKuttaMersonIntegrator(system)
    rates = _rates(_step_estimates(integ, system.realize_topology(), [0.04 / 2 ** k for k in range(4)]))
    assert all(abs(r - 5) <= RATE_SLACK for r in rates), rates
