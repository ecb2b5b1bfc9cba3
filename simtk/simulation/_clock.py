"""The driver's clock: times on an exact integer tick grid.

Every agent time and driver step is a whole number of ticks, and the time of tick ``k`` is computed
afresh as ``k * num / den`` (one correctly rounded division of exact integers), never by adding
steps, so that after a million steps of 1e-3 the time is still the float nearest to 1000.
"""
from __future__ import annotations

import math
from fractions import Fraction

__all__ = ["Clock", "as_fraction"]

#: Intervals are read as the nearest fraction with at most this denominator (1 ns resolution of 1 s).
_MAX_DENOMINATOR = 10**9


def as_fraction(x: float, what: str) -> Fraction:
    """``x`` (finite, > 0) as the nearest simple fraction, so that 1e-3 is exactly 1/1000."""
    try:
        xf = float(x)
    except (TypeError, ValueError):
        raise TypeError(f"{what}: expected a time, got {x!r}") from None
    if not (xf > 0 and math.isfinite(xf)):
        raise ValueError(f"{what}: must be finite and > 0, got {x!r}")
    return Fraction(xf).limit_denominator(_MAX_DENOMINATOR)


class Clock:
    """A tick of ``gcd`` of the given intervals, and conversions between ticks and times."""

    def __init__(self, intervals: list[Fraction], t0: float):
        tick = intervals[0]
        for f in intervals[1:]:
            tick = Fraction(math.gcd(tick.numerator * f.denominator, f.numerator * tick.denominator),
                            tick.denominator * f.denominator)
        self.tick = tick
        self._num, self._den = tick.numerator, tick.denominator
        # The start is itself a tick count when it lies on the grid; otherwise the grid is shifted by t0.
        k0 = Fraction(t0).limit_denominator(_MAX_DENOMINATOR) / tick
        self.offset = 0.0 if k0.denominator == 1 else float(t0)
        self.k0 = int(k0) if k0.denominator == 1 else 0

    def time(self, k: int) -> float:
        """The time of tick ``k``: exact integer arithmetic, one rounding."""
        return self.offset + (k * self._num) / self._den

    def ticks(self, interval: Fraction) -> int:
        """How many ticks ``interval`` is (an exact whole number by construction of the tick)."""
        n = interval / self.tick
        assert n.denominator == 1, (interval, self.tick)
        return int(n)

    def tick_at_or_after(self, t: float) -> int:
        """The first tick whose time is >= ``t`` (within a rounding of ``t``)."""
        k = math.ceil((Fraction(t - self.offset) / self.tick) - Fraction(1, 10**6))
        while self.time(k) < t - 4 * math.ulp(max(1.0, abs(t))):
            k += 1
        return k
