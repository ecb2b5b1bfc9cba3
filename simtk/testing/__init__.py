"""Checking your own extensions: hypothesis strategies and checkers (docs/api_contract.md, "Checking your own extensions").

Strategies (``simtk.testing.strategies``) draw random multibody systems (`multibody_systems`), random
mixes of mobilizers, yours included (`mobilizer_mixes`), and states of a system (`states`, every
speed nonzero: `nonzero_speeds`).

Checkers (``simtk.testing.checkers``) compare what your extension computes with an independent
estimate and return a `CheckReport`; pass ``assert_ok=True`` (or call ``report.assert_ok()``) to raise
`CheckFailure` naming the worst mismatch:

* `check_mobilizer`: a mobilizer's H, HDot, N (and a Custom implementation's every method) against
  finite differences of its transform;
* `check_force`: a conservative force against minus the gradient of its potential energy;
* `check_constraint`: a constraint's errors are successive time derivatives, its forces G^T lambda;
* `check_realize_is_pure`: realizing never changes a state variable;
* `check_caching`: incremental realization gives the results of realization from scratch;
* `check_twins`: an element and its twin (a jitted element and its Python version, or the built-in it
  stands for) compute the same at random states.
"""
from .checkers import check_caching, check_constraint, check_force, check_mobilizer, check_realize_is_pure
from .report import CheckFailure, CheckReport, Comparison
from .strategies import (
    DEFAULT_MOBILIZERS,
    MultibodyModel,
    mass_properties,
    mobilizer_kinds,
    mobilizer_mixes,
    multibody_systems,
    nonzero_speeds,
    rotations,
    states,
    transforms,
    unit_quaternions,
)
from .twins import check_twins

__all__ = [
    "check_mobilizer", "check_force", "check_constraint", "check_realize_is_pure", "check_caching", "check_twins",
    "CheckReport", "CheckFailure", "Comparison",
    "DEFAULT_MOBILIZERS", "MultibodyModel", "multibody_systems", "states", "mobilizer_kinds", "mobilizer_mixes",
    "mass_properties", "rotations", "transforms", "unit_quaternions", "nonzero_speeds",
]
