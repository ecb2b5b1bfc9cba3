"""What a checker returns: a `CheckReport` of `Comparison` rows, and the error it raises on request."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["CheckFailure", "CheckReport", "Comparison"]


class CheckFailure(AssertionError):
    """A checker found a mismatch; the message names the worst one. ``.report`` has them all."""

    def __init__(self, report: "CheckReport"):
        self.report = report
        super().__init__(report.summary())


@dataclass
class Comparison:
    """One comparison of a quantity with an independent estimate of it.

    Attributes
    ----------
    quantity : str
        What was compared, e.g. ``"V_FM = H u vs d/dt X_FM"``.
    where : str
        The element and place, e.g. ``"<MobilizedBody.Custom #1>"``, ``"mobility 3"``.
    actual, expected : ndarray
        The value under test and the independent estimate.
    error : float
        max |actual - expected|.
    tolerance : float
        The error allowed (``atol + rtol * scale``).
    """

    quantity: str
    where: str
    actual: np.ndarray
    expected: np.ndarray
    error: float
    tolerance: float

    @property
    def ok(self) -> bool:
        """Whether the error is within the tolerance."""
        return bool(self.error <= self.tolerance)

    @property
    def ratio(self) -> float:
        """error / tolerance (inf for an error with zero tolerance); > 1 is a failure."""
        if self.tolerance > 0:
            return self.error / self.tolerance
        return 0.0 if self.error == 0 else float("inf")

    def describe(self) -> str:
        status = "ok" if self.ok else "MISMATCH"
        with np.printoptions(precision=6, suppress=False, threshold=12):
            return (f"{status}: {self.quantity} at {self.where}: error {self.error:.3g} "
                    f"(tolerance {self.tolerance:.3g})"
                    f"\n    actual   = {np.asarray(self.actual)}\n    expected = {np.asarray(self.expected)}")


@dataclass
class CheckReport:
    """The result of one checker: every comparison made, and notes on what could not be checked.

    Attributes
    ----------
    check : str
        The checker's name.
    subject : str
        What was checked.
    comparisons : list of Comparison
    notes : list of str
        What was skipped, and why.
    """

    check: str
    subject: str
    comparisons: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    def add(self, quantity: str, where: str, actual, expected, rtol: float, atol: float,
            scale: float | None = None) -> Comparison:
        """Compare ``actual`` with ``expected``: error max|a - e| against ``atol + rtol * scale``
        (``scale`` defaults to max(|a|, |e|))."""
        a = np.atleast_1d(np.asarray(actual, dtype=np.float64))
        e = np.atleast_1d(np.asarray(expected, dtype=np.float64))
        if a.shape != e.shape:
            err = float("inf")
        else:
            err = float(np.abs(a - e).max()) if a.size else 0.0
            if not np.isfinite(err):
                err = float("inf")
        if scale is None:
            scale = max(float(np.abs(a).max()) if a.size else 0.0, float(np.abs(e).max()) if e.size else 0.0)
        c = Comparison(quantity, where, a, e, err, atol + rtol * scale)
        self.comparisons.append(c)
        return c

    def note(self, text: str) -> None:
        """Record something that was not checked, and why."""
        self.notes.append(text)

    @property
    def ok(self) -> bool:
        """Whether every comparison passed."""
        return all(c.ok for c in self.comparisons)

    @property
    def failures(self) -> list:
        """The comparisons that failed, worst first."""
        return sorted((c for c in self.comparisons if not c.ok), key=lambda c: -c.ratio)

    @property
    def worst(self) -> Comparison | None:
        """The comparison with the largest error relative to its tolerance (None if there were none)."""
        return max(self.comparisons, key=lambda c: c.ratio, default=None)

    def summary(self) -> str:
        """One paragraph: pass/fail, counts and the worst comparison."""
        n, bad = len(self.comparisons), len(self.failures)
        head = f"{self.check} of {self.subject}: " + (f"{bad} of {n} comparisons FAILED" if bad else
                                                      f"all {n} comparisons passed")
        w = self.worst
        lines = [head]
        if w is not None:
            lines.append(("worst " if bad else "closest to its tolerance ") + w.describe())
        lines.extend(f"note: {t}" for t in self.notes)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def assert_ok(self) -> "CheckReport":
        """Raise `CheckFailure` naming the worst mismatch if any comparison failed; else return self."""
        if not self.ok:
            raise CheckFailure(self)
        return self
