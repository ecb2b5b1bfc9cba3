"""Tutorial 1: a custom Subsystem, realized stage by stage.

This mirrors "Advanced Programming with SimTK" (shared/seeds/004), chapter 2 "A Custom Subsystem":
§2.1 a first Subsystem, §2.4 a state variable allocated at Topology, §2.5.1 continuous variables q, u, z
and their derivatives, §2.5.2-2.5.3 cache entries and a lazy one. There is no multibody here: the
subsystem is a damped oscillator on its own,

    m x'' = -k x - c x'          q = [x], u = [v], z = [W] with W' = c v**2 (the work done by damping)

Run it with ``python tutorials/01_custom_subsystem.py``.
"""
from __future__ import annotations

import numpy as np

from simtk import Stage, StageError, State, Subsystem, System


class OscillatorSubsystem(Subsystem):
    """A mass on a spring with a dashpot.

    Mass and damping are topological properties (data members fixed before ``realize_topology``); the
    stiffness is a discrete state variable, so it may change during a simulation (seed §2.4).
    """

    def __init__(self, system: System, mass: float = 1.0, damping: float = 0.2,
                 default_stiffness: float = 4.0, x0: float = 1.0):
        self.mass, self.damping = mass, damping
        self.default_stiffness, self.x0 = default_stiffness, x0
        self.energy_computations = 0
        super().__init__(system, name="oscillator", version="1.0")

    # --- Topology: the only stage whose indices may be stored on the subsystem (seed §2.4) ---
    def realize_subsystem_topology_impl(self, state: State) -> None:
        self.x_index = self.allocate_q(state, [self.x0])
        self.v_index = self.allocate_u(state, [0.0])
        self.w_index = self.allocate_z(state, [0.0])
        # Changing the stiffness changes forces, so it invalidates Dynamics (and everything after).
        self.k_index = self.allocate_discrete_variable(state, Stage.Dynamics, self.default_stiffness)
        # The spring-dashpot force depends on q, u and k: computed while realizing Dynamics.
        self.force_index = self.allocate_cache_entry(state, Stage.Dynamics, 0.0)
        # The energy is only needed on demand: a lazy entry (latest stage Infinity, seed §2.5.3).
        self.energy_index = self.allocate_lazy_cache_entry(state, Stage.Dynamics, 0.0)

    def realize_subsystem_velocity_impl(self, state: State) -> None:
        self.upd_qdot(state)[self.x_index] = self.get_u(state)[self.v_index]

    def realize_subsystem_dynamics_impl(self, state: State) -> None:
        x, v = self.get_q(state)[self.x_index], self.get_u(state)[self.v_index]
        self.set_cache_entry(state, self.force_index, -self.get_stiffness(state) * x - self.damping * v)

    def realize_subsystem_acceleration_impl(self, state: State) -> None:
        v = self.get_u(state)[self.v_index]
        a = self.get_force(state) / self.mass
        self.upd_udot(state)[self.v_index] = a
        self.upd_qdotdot(state)[self.x_index] = a
        self.upd_zdot(state)[self.w_index] = self.damping * v * v

    # --- the public face of the subsystem ---
    def get_stiffness(self, state: State) -> float:
        return self.get_discrete_variable(state, self.k_index)

    def set_stiffness(self, state: State, k: float) -> None:
        self.set_discrete_variable(state, self.k_index, k)

    def get_force(self, state: State) -> float:
        return self.get_cache_entry(state, self.force_index)

    def realize_energy(self, state: State) -> None:
        if self.is_cache_value_realized(state, self.energy_index):
            return
        x, v = self.get_q(state)[self.x_index], self.get_u(state)[self.v_index]
        e = 0.5 * self.mass * v * v + 0.5 * self.get_stiffness(state) * x * x
        self.set_cache_entry(state, self.energy_index, e)
        self.mark_cache_value_realized(state, self.energy_index)
        self.energy_computations += 1

    def get_energy(self, state: State) -> float:
        self.realize_energy(state)
        return self.get_cache_entry(state, self.energy_index)


def available(osc: OscillatorSubsystem, state: State) -> str:
    """What can be read at the State's current stage (each getter raises a StageError when too early)."""
    probes = {
        "t": lambda: f"{state.get_time():g}",
        "q": lambda: f"{state.get_q()}",
        "qdot": lambda: f"{state.get_qdot()}",
        "force": lambda: f"{osc.get_force(state):.3f}",
        "udot": lambda: f"{state.get_udot()}",
        "zdot": lambda: f"{state.get_zdot()}",
    }
    shown = []
    for name, read in probes.items():
        try:
            shown.append(f"{name}={read()}")
        except StageError:
            pass
    return ", ".join(shown)


def rk4_step(system: System, state: State, h: float) -> None:
    """One classical Runge-Kutta step on y = [q, u, z], realizing to Acceleration for each slope."""
    t0, y0 = state.get_time(), state.get_y().copy()
    slopes = []
    for c, dy_from in ((0.0, None), (0.5, 0), (0.5, 1), (1.0, 2)):
        state.set_time(t0 + c * h)
        state.set_y(y0 if dy_from is None else y0 + c * h * slopes[dy_from])
        system.realize(state, Stage.Acceleration)
        slopes.append(state.get_ydot().copy())
    state.set_time(t0 + h)
    state.set_y(y0 + h / 6.0 * (slopes[0] + 2 * slopes[1] + 2 * slopes[2] + slopes[3]))


def main() -> None:
    system = System("tutorial 1")
    osc = OscillatorSubsystem(system)

    state = system.realize_topology()
    print(f"realize_topology(): stage {state.get_system_stage()}, nq={state.get_nq()}, "
          f"nu={state.get_nu()}, nz={state.get_nz()}, stiffness={osc.get_stiffness(state)}")
    for stage in (Stage.Instance, Stage.Time, Stage.Position, Stage.Velocity, Stage.Dynamics,
                  Stage.Acceleration):
        system.realize(state, stage)
        print(f"  realized to {str(state.get_system_stage()):<12s} {available(osc, state)}")

    print(f"energy (lazy) = {osc.get_energy(state):.3f}; asked again: {osc.get_energy(state):.3f}; "
          f"computed {osc.energy_computations} time(s)")

    osc.set_stiffness(state, 9.0)
    print(f"set_stiffness(9): stage drops to {state.get_system_stage()} (Dynamics - 1)")
    try:
        osc.get_force(state)
    except StageError as exc:
        print(f"  reading the force now fails: {type(exc).__name__}")
    print(f"  energy recomputed: {osc.get_energy(state):.3f} (computations: {osc.energy_computations})")
    state.set_u([0.5])
    print(f"set_u([0.5]): stage drops to {state.get_system_stage()} (Velocity - 1)")

    # The damper's work W (the z variable) accounts for the energy lost: E + W stays constant.
    system.realize(state, Stage.Acceleration)
    e0 = osc.get_energy(state)
    for _ in range(500):
        rk4_step(system, state, 0.01)
    system.realize(state, Stage.Acceleration)
    e, w = osc.get_energy(state), state.get_z()[0]
    print(f"after t={state.get_time():g}: E={e:.6f}, W={w:.6f}, E+W={e + w:.6f} (E0={e0:.6f}); "
          f"Acceleration realized {system.get_num_realizations_of_this_stage(Stage.Acceleration)} times")
    assert np.isclose(e + w, e0, rtol=1e-6)


if __name__ == "__main__":
    main()
