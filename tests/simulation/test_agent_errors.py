"""Errors of the agents name their source: a non-finite input names the controller or input probe that
wrote it and the coordinate (or input) it went to; a PDController's wrong coordinate path is refused when
it is added to the Simulation, with the coordinates the System has listed.

Laws: the error is raised before the input is written (the State's driver inputs are those before the
driver step), and it names the agent by its path under ``/agents``.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from simtk import (
    Body,
    Force,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    SimbodyMatterSubsystem,
    Transform,
)
from simtk.common.errors import NonFiniteForceError
from simtk.common.function import Function
from simtk.simulation import Controller, InputProbe, PDController, Simulation


def arm(n: int = 2):
    """An n-link planar pin chain under gravity."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0], name="gravity")
    body = Body.Rigid(MassProperties.from_central_inertia(1.0, [0, -0.25, 0], Inertia([0.02, 0.001, 0.02])))
    parent = matter.ground
    for i in range(n):
        parent = MobilizedBody.Pin(parent, Transform([0, -0.5, 0]) if i else Transform(), body, Transform(),
                                   name=f"link{i}")
    return system


def simulation(n: int = 2) -> Simulation:
    system = arm(n)
    return Simulation(system, system.realize_topology(), step_size=0.01)


# ---------------------------------------------------------------------- non-finite inputs
def test_a_pd_controller_with_a_nan_target_is_refused_naming_it_and_the_coordinate():
    sim = simulation()
    pd = PDController({"/matter/link1/angle": (10.0, 1.0)}, {"/matter/link1/angle": math.nan})
    with pytest.raises(ValueError, match=r"PDController '/agents/hold'.*'/matter/link1/angle'.*not finite"):
        sim.add_controller(pd, name="hold")


class NanAfter(Function):
    """0 until ``t0``, NaN after (a target trajectory that breaks down)."""

    def __init__(self, t0: float):
        super().__init__()
        self.t0 = t0

    def get_argument_size(self) -> int:
        return 1

    def get_max_derivative_order(self) -> int:
        return 2

    def calc_value(self, x) -> float:
        return 0.0 if x[0] < self.t0 else math.nan

    def calc_derivative(self, derivs, x) -> float:
        return 0.0


def test_a_pd_controller_whose_target_function_gives_nan_is_named_with_the_coordinate():
    sim = simulation()
    sim.add_controller(PDController({"/matter/link0/angle": (10.0, 1.0), "/matter/link1/angle": (10.0, 1.0)},
                                    {"/matter/link0/angle": 0.0, "/matter/link1/angle": NanAfter(0.05)}),
                       name="track")
    with pytest.raises(ValueError, match=r"PDController '/agents/track'.*coordinate '/matter/link1/angle'"):
        sim.run(0.1)
    assert sim.get_time() == 0.05  # left at the start of the refused driver step


def test_a_pd_controller_whose_law_overflows_is_named_with_the_coordinate():
    # finite gains and target whose product is not: the law's own result is refused, not a later sum
    sim = simulation()
    sim.add_controller(PDController({"/matter/link1/angle": (1e300, 0.0)}, {"/matter/link1/angle": 1e300}),
                       name="hold")
    with pytest.raises(NonFiniteForceError, match=r"PDController '/agents/hold'.*coordinate '/matter/link1/angle'"
                                                 r".*not finite") as info:
        sim.run(0.1)
    assert isinstance(info.value.element, PDController)
    assert sim.get_time() == 0.0


class NanLaw(Controller):
    """A user's law that returns NaN from ``t0`` on."""

    def __init__(self, t0: float):
        super().__init__()
        self.t0 = t0

    def compute(self, state):
        t = state.get_time()
        self.set_input(state, "/matter/link0/rate", math.nan if t >= self.t0 else 0.5)


def test_a_user_controller_returning_nan_is_named_with_the_input_it_wrote():
    sim = simulation()
    sim.add_controller(NanLaw(0.03), name="law")
    with pytest.raises(NonFiniteForceError, match=r"NanLaw '/agents/law'.*not finite.*'/matter/link0/rate'"):
        sim.run(0.1)


class BrokenProbe(InputProbe):
    """An input probe whose value breaks down after ``t0`` (a subclass's interpolation gone wrong)."""

    def __init__(self, target, t0):
        super().__init__(target, [0.0, 1.0], [1.0, 1.0])
        self.t0 = t0

    def value_at(self, t):
        return math.inf if t > self.t0 else 1.0


def test_an_input_probe_writing_a_non_finite_value_is_named():
    sim = simulation()
    sim.add_input_probe(BrokenProbe("/matter/link1/rate", 0.02), name="drive")
    with pytest.raises(NonFiniteForceError, match=r"BrokenProbe '/agents/drive'.*not finite.*'/matter/link1/rate'"):
        sim.run(0.1)


class Push(Controller):
    """A spatial force on a body, NaN from ``t0`` on."""

    def __init__(self, t0: float):
        super().__init__()
        self.t0 = t0

    def compute(self, state):
        F = np.zeros((2, 3))
        F[1, 0] = math.nan if state.get_time() >= self.t0 else 1.0
        self.set_input(state, "/matter/link0", F)


def test_a_non_finite_body_force_is_refused_before_it_is_written():
    sim = simulation()
    sim.add_controller(Push(0.02), name="push")
    with pytest.raises(NonFiniteForceError, match=r"Push '/agents/push'.*not finite.*'/matter/link0'"):
        sim.run(0.1)
    # the driver inputs in the Simulation's own State are still the last finite ones
    with sim._beside.during(True):
        F = sim._discrete_forces._values(sim._integ.get_advanced_state()).body_forces
    assert np.isfinite(F).all() and F[1, 1, 0] == 1.0


# ---------------------------------------------------------------------- coordinate paths
def test_a_wrong_coordinate_path_is_refused_when_the_controller_is_added_listing_the_coordinates():
    sim = simulation(3)
    pd = PDController({"/matter/link1/angel": (10.0, 1.0)}, {"/matter/link1/angel": 0.0})
    with pytest.raises(ValueError) as info:
        sim.add_controller(pd, name="pd")
    text = str(info.value)
    assert "PDController '/agents/pd'" in text and "'/matter/link1/angel'" in text
    for i in range(3):
        assert f"/matter/link{i}/angle" in text
    # nothing was added: a run with no agents goes on
    sim.run(0.02)
    assert sim.get_time() == 0.02


def test_a_speed_path_given_as_a_coordinate_is_refused_when_added():
    sim = simulation(2)
    pd = PDController({"/matter/link1/rate": (10.0, 1.0)}, {"/matter/link1/rate": 0.0})
    with pytest.raises(ValueError, match=r"'/matter/link1/rate' is not a coordinate .*/matter/link0/angle"):
        sim.add_controller(pd, name="pd")
