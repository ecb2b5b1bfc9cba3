"""MultibodySystem: a System of one matter subsystem and any number of force subsystems."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .. import _core
from ..common.errors import StepAdjustment
from ..common.output import output
from ..common.stage import ACCELERATION, INSTANCE, VELOCITY, Stage
from ..common.state import State
from ..common.subsystem import Subsystem
from ..common.system import System
from ._fused import describe_python_parts, make_fused
from ._implicit import implicit_linearizer
from .constraints._compiled import loop_constraints_spec, make_loop_constraints
from .forces import Force, GeneralForceSubsystem
from .forces._inputs import _InputPacked
from .matter import SimbodyMatterSubsystem

__all__ = ["MultibodySystem"]


class MultibodySystem(System):
    """A System with a ``SimbodyMatterSubsystem`` and force subsystems (Simbody's MultibodySystem).

    At every stage the matter subsystem is realized first and the others after it, in the order
    they joined; so at Dynamics the force accumulators are zeroed before any force is added, and at
    Acceleration the matter sees the complete forces.
    """

    def __init__(self, name: str = ""):
        super().__init__(name)
        self._matter = None
        self._force_subsystems: list[Subsystem] = []

    def _set_matter_subsystem(self, matter) -> None:
        if self._matter is not None:
            raise ValueError(f"{self!r} already has a matter subsystem")
        self.adopt_subsystem(matter)
        self._matter = matter

    def get_matter_subsystem(self):
        """The SimbodyMatterSubsystem."""
        if self._matter is None:
            raise RuntimeError(f"{self!r} has no SimbodyMatterSubsystem yet")
        return self._matter

    upd_matter_subsystem = get_matter_subsystem

    def set_matter_subsystem(self, matter) -> None:
        """Adopt ``matter`` as this system's matter subsystem (its constructor does this)."""
        self._set_matter_subsystem(matter)

    def add_force_subsystem(self, sub: Subsystem) -> int:
        """Adopt a force subsystem; returns its subsystem index."""
        index = self.adopt_subsystem(sub)
        self._force_subsystems.append(sub)
        return index

    def get_force_subsystems(self) -> tuple:
        """The force subsystems, in the order they joined."""
        return tuple(self._force_subsystems)

    def _realization_order(self, stage: int) -> Sequence[Subsystem]:
        if self._matter is None:
            return self._subsystems
        return [self._matter] + [s for s in self._subsystems if s is not self._matter]

    def realize(self, state: State, stage=Stage.Report) -> None:
        """Realize ``state`` up to ``stage`` (see System.realize).

        A plain State (built-in elements only; see ``simtk/multibody/_fused.py``) is realized from
        Instance to Acceleration by one compiled call that leaves what the stage hooks would.
        """
        fused = state._fused
        if fused and fused.realize_to(self, state, stage):
            return
        super().realize(state, stage)
        if state._fused is None and state._stage >= INSTANCE:
            state._fused = make_fused(self, state)

    def realize_topology(self) -> State:
        if self._matter is None:
            raise RuntimeError(f"{self!r}: a MultibodySystem needs a SimbodyMatterSubsystem")
        return super().realize_topology()

    # ------------------------------------------------------------------ force accumulators
    def upd_rigid_body_forces(self, state: State, stage=Stage.Dynamics) -> np.ndarray:
        """The body-force accumulator (nb, 2, 3), writable, to add into while realizing Dynamics."""
        self._check_force_stage(stage)
        return self.get_matter_subsystem()._upd_forces(state)[0]

    def upd_mobility_forces(self, state: State, stage=Stage.Dynamics) -> np.ndarray:
        """The mobility-force accumulator (nu,), writable, to add into while realizing Dynamics."""
        self._check_force_stage(stage)
        return self.get_matter_subsystem()._upd_forces(state)[1]

    def get_rigid_body_forces(self, state: State, stage=Stage.Dynamics) -> np.ndarray:
        """All applied body forces (nb, 2, 3), read-only (Dynamics)."""
        self._check_force_stage(stage)
        return self.get_matter_subsystem()._get_forces(state)[0]

    def get_mobility_forces(self, state: State, stage=Stage.Dynamics) -> np.ndarray:
        """All applied mobility forces (nu,), read-only (Dynamics)."""
        self._check_force_stage(stage)
        return self.get_matter_subsystem()._get_forces(state)[1]

    @staticmethod
    def _check_force_stage(stage) -> None:
        if not Stage.Position <= int(stage) <= Stage.Dynamics:
            raise ValueError(f"forces are accumulated for Position to Dynamics, not {Stage(stage).name}")

    # ------------------------------------------------------------------ outputs (components)
    @output(Stage.Velocity, float, name="kinetic_energy")
    def _output_kinetic_energy(self, state: State) -> float:
        """Kinetic energy of the matter."""
        return self.calc_kinetic_energy(state)

    @output(Stage.Position, float, name="potential_energy")
    def _output_potential_energy(self, state: State) -> float:
        """Potential energy of every force subsystem."""
        return self.calc_potential_energy(state)

    @output(Stage.Velocity, np.ndarray, name="momentum")
    def _output_momentum(self, state: State) -> np.ndarray:
        """Spatial momentum (2, 3) about the Ground origin, in Ground: (angular, linear)."""
        return self.get_matter_subsystem().calc_system_momentum_about_ground_origin(state)

    @output(Stage.Position, np.ndarray, name="mass_center")
    def _output_mass_center(self, state: State) -> np.ndarray:
        """The system mass center (3,) in Ground."""
        return self.get_matter_subsystem().calc_system_mass_center_location_in_ground(state)

    # ------------------------------------------------------------------ energy
    def _other_subsystems(self) -> list:
        """Subsystems that are neither the matter nor force subsystems (deformable bodies, users')."""
        return [s for s in self._subsystems if s is not self._matter and s not in self._force_subsystems]

    def calc_kinetic_energy(self, state: State) -> float:
        """Kinetic energy of the matter and of any other subsystem that has some (Velocity)."""
        return self.get_matter_subsystem().calc_kinetic_energy(state) + float(sum(
            s.calc_kinetic_energy(state) for s in self._other_subsystems() if hasattr(s, "calc_kinetic_energy")))

    def calc_potential_energy(self, state: State) -> float:
        """Sum of every force subsystem's potential energy, and any other subsystem's (Position)."""
        return float(sum(s.calc_potential_energy(state) for s in self._force_subsystems + self._other_subsystems()
                         if hasattr(s, "calc_potential_energy")))

    def calc_energy(self, state: State) -> float:
        """Kinetic plus potential energy (Velocity)."""
        return self.calc_kinetic_energy(state) + self.calc_potential_energy(state)

    # ------------------------------------------------------------------ the compiled time loop
    def _compiled_derivatives(self, state: State, need_state: bool = False) -> tuple:
        """How the compiled time loop evaluates this System's derivatives at ``state`` (realized to
        Acceleration): ``((batch, quaternion q offsets, quaternion bodies, constraints, state
        derivative, held elements), None)``, or ``(None, why not)``.

        Built-in elements only: the matter's batch kernels, with the constraints they solve, and the
        values of ``Force.DiscreteForces`` elements held over the steps (``held elements``). With
        other Python parts (a ``Force.Custom``, a user's subsystem; see ``_fused.py``), or when asked
        (``need_state``: the loop evaluates event witnesses on the State after each step): the State's own
        fused realization, which calls them (``state derivative``; the batch then has no force sets).
        """
        matter = self.get_matter_subsystem()
        if type(matter) is not SimbodyMatterSubsystem:
            return None, f"the matter subsystem is a {type(matter).__name__}, whose realize hooks run in Python"
        t = type(self)
        if (not self._own_weight_rules() or t.calc_q_err_weights is not System.calc_q_err_weights
                or t.calc_u_err_weights is not System.calc_u_err_weights):
            return None, f"{t.__name__} overrides the unit weights of error control, which are computed in Python"
        layout = matter._layout(state)
        qb = np.asarray(layout.quaternion_bodies, dtype=np.int64)
        qq = matter.get_q_start(state) + np.asarray(layout.qoff, dtype=np.int64)[qb]
        result, why = (None, "") if need_state else self._batch_derivatives(state, matter, qq, qb)
        if result is not None:
            return result, None
        fused = state._fused
        if fused and (fused.staged or need_state):
            # Python parts: the State's own fused realization calls them where the hooks would (and the
            # matter's own hooks where it is not all kernels: Custom mobilizers, constraints, Motions)
            ws = matter._cache(state).ws
            derivative = _core.make_state_derivative(self, state, ACCELERATION, StepAdjustment, VELOCITY)
            return (_core.make_tree_batch(ws, (), custom=True), qq, qb, None, derivative, ()), None
        return None, why

    def _implicit_linearizer(self, state: State) -> tuple:
        """``(Linearizer, None)`` for the semi-implicit Euler step at ``state``'s instance, or ``(None, why
        not)`` (see ``simtk.multibody._implicit``)."""
        return implicit_linearizer(self, state)

    def _batch_derivatives(self, state: State, matter, qq, qb) -> tuple:
        """The compiled loop's derivatives from the batch kernels (built-in elements, DiscreteForces held,
        the constraints the loop solves), or (None, why not)."""
        held = self._held_forces(state)
        nz = state.get_nz()
        if nz:
            # z the steps integrate natively: all of them the state variables of elements whose compiled
            # sets write their derivatives (muscles; a disabled one's are zero)
            owned = sum(len(f._names_of("state_variable")) for sub in self._force_subsystems
                        for f in getattr(sub, "_forces", ()) if getattr(type(f), "_compiled_state", False))
            if held is None or owned != nz:
                return None, f"{nz - owned if held is not None else nz} auxiliary variables z are integrated in Python"
        for sub in self._subsystems:
            if sub is not matter and sub not in self._force_subsystems and not self._passive(sub):
                return None, f"subsystem {sub.get_name()!r} ({type(sub).__name__}) is realized in Python"
        spec, why = loop_constraints_spec(matter, matter._cache(state).plan)
        if why:
            return None, why
        layout = matter._layout(state)
        if held is not None and not layout.custom:
            # the built-in sets (the Actuators' after them, their controls read at every run), and the
            # DiscreteForces' values held over the steps (added after them)
            groups = self._force_subsystems[0]._groups(state)
            sets = tuple(p.fs for p in groups.position_packed + groups.velocity_packed)
            sets += tuple(p.fs for p in held if isinstance(p, _InputPacked))
            batch = _core.make_tree_batch(matter._cache(state).ws, sets)
        else:
            try:
                batch = matter._batch_entry(state, constraints_solved_by_caller=True).batch
            except NotImplementedError as exc:
                # the batch's reason without its advice to batch users
                why = str(exc).split("batched dynamics: ", 1)[-1].split(";", 1)[0]
                why = why.replace(", which the batch kernels cannot run", "")
                if spec is not None:
                    why += " (with constraint equations the compiled loop takes built-in elements only)"
                return None, why
        constraints = None if spec is None else make_loop_constraints(batch, spec)
        return (batch, qq, qb, constraints, None, tuple(held or ())), None

    def _held_forces(self, state: State) -> list | None:
        """The ``Force.DiscreteForces`` elements, in the order their forces are added, and the compiled
        sets fed from the State (``Force.Actuators`` whose functions of time are all compiled,
        ``Force.PathActuator``), when they are the only elements of this System evaluated from Python
        (one GeneralForceSubsystem, no Force.Custom): the compiled time loop then holds their values
        (controls) over its steps. None otherwise."""
        if len(self._force_subsystems) != 1 or type(self._force_subsystems[0]) is not GeneralForceSubsystem:
            return None
        matter = self.get_matter_subsystem()
        if any(sub is not matter and sub not in self._force_subsystems and not self._passive(sub)
               for sub in self._subsystems):
            return None  # other Python parts: the State's own realization calls them all
        groups = self._force_subsystems[0]._groups(state)
        if groups.has_customs or groups.position_python or not groups.velocity_python:
            return None
        held: list = []
        for cls, packed in groups.velocity_python:
            if isinstance(packed, _InputPacked) and packed.compiled_only:
                held.append(packed)
            elif cls is Force.DiscreteForces:
                held.extend(packed.elements)
            else:
                return None
        return held

    def _describe_python_parts(self, state: State) -> list[str]:
        """The Python parts a realization of ``state`` calls, in words, with their cost per evaluation."""
        return describe_python_parts(self, state)

    def _passive(self, sub: Subsystem) -> bool:
        """True when ``sub`` has no realize hook from Time to Acceleration (a holder of variables, such
        as the simulation driver's agents): realizing the derivatives never calls into it."""
        return all(hook is None for g in range(Stage.Time, Stage.Acceleration + 1)
                   for idx, hook in self._plan[g] if idx == sub._index)

    # ------------------------------------------------------------------ error control
    def _unit_weights_vary(self, state: State) -> bool:
        # The q weights depend on q only through quaternions; without them (or with a subclass's own
        # weights) they are the System's rule.
        if not self._own_weight_rules():
            return True
        return len(self.get_matter_subsystem()._layout(state).quaternion_bodies) > 0

    def _own_weight_rules(self) -> bool:
        """True when the unit weights of q, u and z are this class's rules, not a subclass's."""
        t = type(self)
        return (t.calc_q_weights is MultibodySystem.calc_q_weights and t.calc_u_weights is System.calc_u_weights
                and t.calc_z_weights is System.calc_z_weights)

    def calc_q_weights(self, state: State) -> np.ndarray:
        """Unit weights of q derived through N: w_qi = max_j ‖(N^-1)_ji‖ (at least 1).

        A change dq moves the speeds by du = N^-1 dq, so weighting q_i by the largest u it moves makes
        a q error count like the u error it stands for. That is 1 for every coordinate with qdot = u
        and for Euler angles (N^-1 has unit-bounded entries with a 1 in each column); a quaternion
        component's weight is about 2 (N^-1 = 2 E(q)^T).
        """
        w = np.ones(state.get_nq())
        matter = self.get_matter_subsystem()
        layout = matter._layout(state)
        qb = layout.quaternion_bodies
        if len(qb):
            idx = matter.get_q_start(state) + layout.qoff[qb][:, None] + np.arange(4)
            a = np.abs(state.get_q()[idx])  # (k, 4): |q0|, |x|, |y|, |z| of each quaternion
            # Column 0 of 2 E^T is -2 v; column k >= 1 holds 2 q0 and the two vector parts other than k.
            wq = np.empty_like(a)
            wq[:, 0] = 2.0 * a[:, 1:].max(axis=1)
            wq[:, 1] = 2.0 * np.maximum(a[:, 0], np.maximum(a[:, 2], a[:, 3]))
            wq[:, 2] = 2.0 * np.maximum(a[:, 0], np.maximum(a[:, 1], a[:, 3]))
            wq[:, 3] = 2.0 * np.maximum(a[:, 0], np.maximum(a[:, 1], a[:, 2]))
            w[idx] = np.maximum(wq, 1.0)
        return w
