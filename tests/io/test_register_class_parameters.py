"""A registered user class keeps every parameter through a model file, or is refused, naming the parameter.

Laws: ``register_class`` refuses a class whose constructor takes a parameter that is not a declared
Property (a model file rebuilds the class as ``cls(**properties)``, so that parameter would come back
at its constructor default), or that does not accept one of its Properties, naming the class, the
parameter and how to declare it; ``save_model`` refuses an element whose user object holds a public
attribute that is not a declared Property, naming the element's path and the attribute; and a
Property whose constructor default differs from the Property's default comes back with the value saved.
"""
from __future__ import annotations

import pytest

from simtk import (
    Body,
    Force,
    Function,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    Property,
    SimbodyMatterSubsystem,
    Stage,
)
from simtk.io import register_class
from simtk.io.model_file import ModelFileError, model_from_text, model_to_text


class PlainSpring(Force.Custom.Implementation):
    """Its stiffness a plain attribute: what register_class accepted before."""

    def __init__(self, a=0.05):
        super().__init__()
        self.a = a

    def calc_force(self, state, body_forces, particle_forces, mobility_forces):
        mobility_forces[0] -= self.a * state.get_q()[0]


class DeclaredSpring(Force.Custom.Implementation):
    """Its stiffness a declared Property."""

    a = Property(0.05, stage=Stage.Dynamics, doc="N m/rad")

    def __init__(self, a=0.05):
        super().__init__()
        self.a = a

    def calc_force(self, state, body_forces, particle_forces, mobility_forces):
        mobility_forces[0] -= self.a * state.get_q()[0]


class OtherDefault(Force.Custom.Implementation):
    """The Property's default (0.05) and the constructor's (0.08) differ."""

    a = Property(0.05, stage=Stage.Dynamics)

    def __init__(self, a=0.08):
        super().__init__()
        self.a = a

    def calc_force(self, state, body_forces, particle_forces, mobility_forces):
        mobility_forces[0] -= self.a * state.get_q()[0]


class Unaccepted(Force.Custom.Implementation):
    """A declared Property its constructor does not take."""

    a = Property(0.05, stage=Stage.Dynamics)

    def __init__(self):
        super().__init__()

    def calc_force(self, state, body_forces, particle_forces, mobility_forces):
        pass


class PlainRamp(Function):
    def __init__(self, slope=1.0):
        self.slope = slope

    def calc_value(self, x):
        return self.slope * x[0]

    def calc_derivative(self, deriv_components, x):
        return self.slope if len(deriv_components) == 1 else 0.0

    def get_argument_size(self):
        return 1

    def get_max_derivative_order(self):
        return 2


register_class(DeclaredSpring, "params_test.DeclaredSpring")
register_class(OtherDefault, "params_test.OtherDefault")


def _system(impl):
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    body = Body.Rigid(MassProperties(1.0, [0, 0, 0], Inertia(0.1)))
    MobilizedBody.Pin(matter.ground, body, name="arm")
    Force.Custom(forces, impl, name="spring")
    return system


@pytest.mark.parametrize("cls, what", [(PlainSpring, "a"), (PlainRamp, "slope")])
def test_register_class_refuses_a_constructor_parameter_that_is_not_a_property(cls, what):
    with pytest.raises(TypeError, match=rf"{cls.__qualname__}.*parameter '{what}'.*not a declared Property.*"
                                        rf"{what} = Property\("):
        register_class(cls, f"params_test.{cls.__qualname__}")
    from simtk.io import _model_registry
    assert f"params_test.{cls.__qualname__}" not in _model_registry._BY_NAME  # nothing registered


def test_register_class_refuses_a_property_its_constructor_does_not_take():
    with pytest.raises(TypeError, match=r"Unaccepted.*property 'a'.*constructor"):
        register_class(Unaccepted, "params_test.Unaccepted")


def test_save_model_refuses_a_plain_attribute_of_a_registered_class_naming_it():
    impl = DeclaredSpring(0.08)
    impl.damping = 0.3  # a parameter that is not declared: a file could not keep it
    system = _system(impl)
    with pytest.raises(ModelFileError, match=r"/forces/spring.*attribute 'damping'.*Property"):
        model_to_text(system)


def test_a_declared_property_round_trips_and_a_constructor_default_does_not_replace_it():
    loaded = model_from_text(model_to_text(_system(DeclaredSpring(0.08))))
    assert loaded.get_component("/forces/spring").get_implementation().a == 0.08
    # saved at the Property's default 0.05, which the constructor's default 0.08 replaced when loading
    loaded = model_from_text(model_to_text(_system(OtherDefault(0.05))))
    assert loaded.get_component("/forces/spring").get_implementation().a == 0.05
