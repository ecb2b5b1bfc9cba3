"""The Python form of OpenSim actuation that ``load_osim`` used before the actuators became the compiled
``Force.Actuators`` kind: kept only as the test oracle of that kernel (core/forces.pxi, FK_ACTUATOR).

Each actuator's control is its held value plus its prescribed functions of time, in order; an enabled
actuator with a nonzero control applies ``optimal_force * control`` through ``OsimActuator.apply``
(the MobilizedBody API).
"""
from __future__ import annotations

import numpy as np


class ActuationOracle:
    """All actuators of a loaded model, evaluated in Python."""

    def __init__(self, model, extra=()):
        self.model = model
        self.actuators = list(model.actuators.values())
        # (actuator index, Function): the controllers' functions (all enabled in the models tested), then
        # ``extra`` ones
        self.prescribed = [term for terms in model.controllers.values() for term in terms] + list(extra)

    def controls(self, state) -> np.ndarray:
        c = np.array([float(self.model.actuation.get_discrete_variable_value(state, a.var))
                      for a in self.actuators])
        t = np.array([state.get_time()])
        for i, f in self.prescribed:
            c[i] += f.calc_value_unchecked(t)
        return c

    def forces(self, state) -> tuple[np.ndarray, np.ndarray]:
        """(body_forces (nb, 2, 3), mobility_forces (nu,)) of all actuators at ``state`` (Position)."""
        matter = self.model.matter
        body_forces = np.zeros((matter.get_num_bodies(), 2, 3))
        mobility_forces = np.zeros(state.get_nu())
        for a, c in zip(self.actuators, self.controls(state)):
            if a.enabled and c != 0.0:
                a.apply(state, c * a.optimal_force, body_forces, mobility_forces)
        return body_forces, mobility_forces
