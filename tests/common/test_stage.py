"""Stage ordering and the exceptions of the staged framework."""
import pytest

import simtk
from simtk import (
    CacheEntryOutOfDateError,
    Stage,
    StageError,
    StageOutOfRangeError,
    StageTooLowError,
    TopologyVersionError,
)

# Simbody's order (seed 004 §1.2-1.3): Empty, then the four construction stages, then the six runtime ones.
SIMBODY_ORDER = ["Empty", "Topology", "Model", "Instance", "Time", "Position", "Velocity", "Dynamics",
                 "Acceleration", "Report", "Infinity"]


def test_stage_values_follow_simbody_order():
    assert [s.name for s in sorted(Stage)] == SIMBODY_ORDER
    assert [int(Stage[n]) for n in SIMBODY_ORDER] == list(range(11))


def test_stage_is_an_int_enum_comparable_with_ints():
    assert Stage.Position > Stage.Time
    assert Stage.Velocity == 6
    assert Stage(8) is Stage.Acceleration
    assert str(Stage.Dynamics) == "Dynamics"


@pytest.mark.parametrize("i", range(10))
def test_next_and_prev_are_inverse_steps(i):
    s = Stage(i)
    assert int(s.next()) == i + 1
    assert s.next().prev() is s


def test_no_stage_after_infinity_or_before_empty():
    with pytest.raises(ValueError):
        Stage.Infinity.next()
    with pytest.raises(ValueError):
        Stage.Empty.prev()


def test_error_hierarchy():
    for cls in (StageTooLowError, StageOutOfRangeError, CacheEntryOutOfDateError, TopologyVersionError):
        assert issubclass(cls, StageError)
    assert issubclass(StageError, RuntimeError)


def test_stage_too_low_message_names_the_element_and_both_stages():
    err = StageTooLowError("Subsystem 'forces' (#2): get_cache_entry(3)", Stage.Dynamics, Stage.Position)
    text = str(err)
    assert "Subsystem 'forces' (#2): get_cache_entry(3)" in text
    assert "Dynamics" in text and "Position" in text
    assert (err.needed, err.current) == (7, 5)


def test_public_names_are_importable_from_top_level():
    for name in ("Stage", "State", "System", "Subsystem", "StageError", "StageTooLowError",
                 "StageOutOfRangeError", "CacheEntryOutOfDateError", "TopologyVersionError"):
        assert hasattr(simtk, name), name
