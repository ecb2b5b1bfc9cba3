"""An integrator's counters (Simbody's Integrator statistics), a mixin of `Integrator`."""
from __future__ import annotations

import math

__all__ = ["IntegratorStatistics"]


class IntegratorStatistics:
    """Steps taken and attempted, realizations, projections, failures and step sizes."""

    def _reset_statistics(self) -> None:
        self._n_adjust = 0
        self._last_adjustment = ""
        self._n_taken = 0
        self._n_attempted = 0
        self._n_realize = 0
        self._n_project = 0
        self._n_err_fail = 0
        self._n_nonfinite_fail = 0
        self._h_prev = math.nan
        self._h_first = math.nan

    def reset_all_statistics(self) -> None:
        """Zero every counter."""
        self._reset_statistics()

    def get_num_steps_taken(self) -> int:
        """Successful steps."""
        return self._n_taken

    def get_num_steps_attempted(self) -> int:
        """Steps tried, successful or not (event-localization probes are not counted)."""
        return self._n_attempted

    def get_num_realizations(self) -> int:
        """Realizations the integrator asked for: one per derivative evaluation (to Acceleration),
        plus the Velocity-only realizations of the semi-explicit methods."""
        return self._n_realize

    def get_num_projections(self) -> int:
        return self._n_project

    def get_num_step_adjustments(self) -> int:
        """Steps retried because an element raised `StepAdjustment`."""
        return self._n_adjust

    def get_last_step_adjustment_reason(self) -> str:
        """The reason given by the last `StepAdjustment` ("" if none)."""
        return self._last_adjustment

    def get_num_error_test_failures(self) -> int:
        return self._n_err_fail

    def get_num_non_finite_failures(self) -> int:
        """Attempts abandoned because a derivative was NaN or infinite, or (with error control) a
        force element's force was not finite."""
        return self._n_nonfinite_fail

    def get_previous_step_size_taken(self) -> float:
        return self._h_prev

    def get_actual_initial_step_size_taken(self) -> float:
        return self._h_first

    def get_predicted_next_step_size(self) -> float:
        return self._h_pred
