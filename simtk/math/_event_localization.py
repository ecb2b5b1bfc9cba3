"""Event localization of the integrators: witness functions sampled across a step, sign changes
found, and the earliest one bracketed by bisection to the event's time window (Simbody's
``findEventOccurrences`` / ``localizeEvents``). A mixin of `Integrator`, which owns the state it reads."""
from __future__ import annotations

import math

import numpy as np

from ..common.events import event_where
from ..common.stage import ACCELERATION
from .integrator_errors import IntegratorError, NonFiniteDerivativeError

_EPS = np.finfo(float).eps
_INF = math.inf


class _EventLocalization:
    """Witness sampling and event localization over the step just attempted."""

    def _witness_values(self, out: np.ndarray) -> np.ndarray:
        s, system = self._adv, self._system
        for i, w in enumerate(self._witnesses):
            if s._stage < self._w_stage[i]:
                system.realize(s, self._w_stage[i])
            value = w.get_value(s)
            try:
                v = float(value)
            except (TypeError, ValueError) as exc:
                raise IntegratorError(f"the event witness of {event_where(w)} (get_value) returned {value!r} at "
                                      f"t = {s.get_time()!r}; it must return a finite number") from exc
            if not math.isfinite(v):
                raise IntegratorError(f"the event witness of {event_where(w)} (get_value) returned {v} at "
                                      f"t = {s.get_time()!r}; it must return a finite number")
            out[i] = v
        return out

    def _crossings(self, wa: np.ndarray, wb: np.ndarray) -> list[int]:
        """Indices of witnesses that changed sign from ``wa`` to ``wb`` in an allowed direction."""
        hits = []
        for i in range(len(wa)):
            a, b = wa[i], wb[i]
            if (self._w_rising[i] and a < 0 <= b) or (self._w_falling[i] and a > 0 >= b):
                hits.append(i)
        return hits

    _SAMPLES = (0.25, 0.5, 0.75)

    def _sample_interior(self, t1: float):
        """Look for a sign change inside the step that the end values hide (e.g. a witness going up
        and down again): evaluate the witnesses on cubic Hermite interpolants of the step at a few
        interior times. Returns ``(t_a, w_a, t_b, w_b, hits)`` bracketing the first change, or None.

        Each sample realizes a scratch State only to the highest witness stage.
        """
        t0, h = self._t0, t1 - self._t0
        sampler, system = self._sampler, self._system
        y0, f0, y1, f1 = self._y0, self._f0, self._adv.get_y(), self._adv.get_ydot()
        top = max(self._w_stage)
        t_a, w_a = t0, self._w0
        for th in self._SAMPLES:
            h00, h10 = 2 * th ** 3 - 3 * th ** 2 + 1, th ** 3 - 2 * th ** 2 + th
            h01, h11 = -2 * th ** 3 + 3 * th ** 2, th ** 3 - th ** 2
            ts = t0 + th * h
            sampler.set_time(ts)
            y = sampler.upd_y()
            np.multiply(y0, h00, out=y)
            y += (h10 * h) * f0
            y += h01 * y1
            y += (h11 * h) * f1
            system.realize(sampler, top)
            self._n_realize += 1
            adv, self._adv = self._adv, sampler
            try:
                w_s = self._witness_values(np.empty(len(self._witnesses)))
            finally:
                self._adv = adv
            hits = self._crossings(w_a, w_s)
            if hits:
                return t_a, w_a, ts, w_s, hits
            t_a, w_a = ts, w_s
        return None

    def _localization_window(self, hits: list[int]) -> float:
        rel = min(self._witnesses[i].get_trigger_info().get_required_localization_time_window() for i in hits)
        scale = 1.0
        get_scale = getattr(self._system, "get_default_time_scale", None)
        if callable(get_scale):
            scale = float(get_scale())
        return rel * self._accuracy * scale

    def _probe(self, t: float) -> None:
        """Put the advanced State at ``t`` within the current step (re-attempted from its start)."""
        if t == self._t0:
            self._restore_start()
            return
        if not self._attempt_step(t) or (self._adv._stage < ACCELERATION and self._realize_derivatives() is None):
            raise NonFiniteDerivativeError(
                f"{self._method_name}: non-finite derivative {self._describe_nonfinite()} while localizing an event")

    def _localize(self, t_low: float, w_low: np.ndarray, t_high: float, w_high: np.ndarray, hits: list[int]):
        """Shrink [t_low, t_high] around the earliest allowed sign change; leave the State at t_high.

        Illinois-modified regula falsi on the witness with the earliest secant root, with the
        candidate kept a quarter-window inside the bracket so both ends close in.
        """
        window = max(self._localization_window(hits), 4 * _EPS * max(1.0, abs(t_high)))
        wl, wh = w_low.copy(), w_high.copy()
        state_at = self._adv.get_time()
        side = 0
        fl_scale = fh_scale = 1.0  # Illinois damping of a retained end
        for _ in range(200):
            width = t_high - t_low
            if width <= window:
                break
            best = None
            for i in hits:
                a, b = wl[i] * fl_scale, wh[i] * fh_scale
                tc = t_low + width * (a / (a - b)) if a != b else t_low + 0.5 * width
                if best is None or tc < best:
                    best = tc
            delta = min(0.25 * window, 0.25 * width)
            tc = min(max(best, t_low + delta), t_high - delta)
            self._probe(tc)
            state_at = tc
            wc = self._witness_values(np.empty(len(self._witnesses)))
            new_hits = self._crossings(wl, wc)
            if new_hits:
                t_high, wh, hits = tc, wc, new_hits
                fh_scale = 1.0
                fl_scale = fl_scale * 0.5 if side == 1 else 1.0
                side = 1
            else:
                t_low, wl = tc, wc
                fl_scale = 1.0
                fh_scale = fh_scale * 0.5 if side == -1 else 1.0
                side = -1
        if state_at != t_high:
            self._probe(t_high)
        self._w1[:] = wh
        return t_low, t_high, hits

    # ------------------------------------------------------------------ stepping
