"""Force elements held by a GeneralForceSubsystem: the ``Force`` base and ``Force.Custom``.

Built-in elements live in ``builtin_forces.py``; each kind packs the parameters of all its enabled
elements once per instance (``_pack``, at Instance) into a compiled ``ForceSet``, and one nogil
kernel call per kind adds their forces (``_calc_bulk``) or sums their energies (``_energy_bulk``),
so the cost in Python is per kind, not per element.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ... import _core
from ..._kinds import KindsMeta
from ...common.component import Component
from ...common.errors import NonFiniteForceError, StageTooLowError
from ...common.output import output
from ...common.stage import Stage
from ...common.state import State

if TYPE_CHECKING:
    from .force_subsystem import GeneralForceSubsystem

__all__ = ["Force"]

_forces_finite = _core._k.forces_finite  # compiled: both accumulators in one call


class _Packed:
    """The packed form of the enabled elements of one built-in kind: the compiled set and the
    elements it holds, in order (to name one in an error)."""

    __slots__ = ("fs", "elements")
    #: whether its kernels read the evaluation's time (put into the workspace before they run)
    reads_time = False

    def __init__(self, fs, elements: list):
        self.fs = fs
        self.elements = list(elements)

    def __deepcopy__(self, memo):
        return self  # never mutated after Instance: copies of a State share it

    def raise_if_bad(self, bad: int, ws=None) -> None:
        """Raise for element ``bad`` whose forces the kernel could not evaluate (-1: none); ``ws``: the
        workspace still holding that configuration, for kinds that diagnose the element again."""
        if bad >= 0:
            e = self.elements[bad]
            raise NonFiniteForceError(f"{e!r}: its forces are not finite in this configuration"
                                      f"{e._singularity_hint()}", e)


class Force(Component, metaclass=KindsMeta):
    """Base of every force element; the element is added to ``forces`` on construction.

    Parameters
    ----------
    forces : GeneralForceSubsystem
        The subsystem that holds the element.
    """

    #: Whether the element's value depends only on positions (and Instance/Time); such elements are
    #: computed once per change of q and reused when only u changes.
    _position_only = False
    _is_custom = False

    def __init__(self, forces: "GeneralForceSubsystem"):
        # The subsystem adopts its elements (GeneralForceSubsystem._adopt_force): asking for that rather
        # than importing the class keeps force_subsystem -> force the only direction.
        if not callable(getattr(forces, "_adopt_force", None)):
            raise TypeError(f"{type(self).__name__}: the first argument must be a GeneralForceSubsystem, "
                            f"got {type(forces).__name__}")
        self._forces = forces
        self._disabled_by_default = False
        self._index = forces._adopt_force(self)

    def __repr__(self) -> str:
        return f"<Force.{type(self).__name__} #{getattr(self, '_index', '?')} {self.get_absolute_path()!r}>"

    def __deepcopy__(self, memo):
        return self  # a topology object: States that refer to it share it

    def get_force_index(self) -> int:
        """This element's index in its force subsystem."""
        return self._index

    def get_force_subsystem(self) -> "GeneralForceSubsystem":
        """The subsystem holding this element."""
        return self._forces

    # ------------------------------------------------------------------ enabling
    def set_disabled_by_default(self, flag: bool) -> None:
        """Whether new States start with this element disabled (a topology change)."""
        self._disabled_by_default = bool(flag)
        self._forces.invalidate_subsystem_topology_cache()

    def is_disabled_by_default(self) -> bool:
        """Whether new States start with this element disabled."""
        return self._disabled_by_default

    def enable(self, state: State) -> None:
        """Enable this element in ``state`` (an Instance-stage change)."""
        self._forces._set_disabled(state, self._index, False)

    def disable(self, state: State) -> None:
        """Disable this element in ``state`` (an Instance-stage change)."""
        self._forces._set_disabled(state, self._index, True)

    def is_disabled(self, state: State) -> bool:
        """Whether this element is disabled in ``state``."""
        return self._forces._is_disabled(state, self._index)

    # ------------------------------------------------------------------ evaluation
    def calc_force_contribution(self, state: State) -> tuple[np.ndarray, np.ndarray]:
        """This element's forces alone: ``(body_forces (nb, 2, 3), mobility_forces (nu,))``.

        Needs Velocity (Position for position-only elements); a disabled element gives zeros.
        """
        matter = self._forces._matter()
        need = Stage.Position if self._position_only_here() else Stage.Velocity
        if state.get_system_stage() < need:
            raise StageTooLowError(f"{self!r}.calc_force_contribution()", need, state.get_system_stage())
        nb, nu = matter.get_num_bodies(), matter.get_num_mobilities(state)
        body_forces, mobility_forces = np.zeros((nb, 2, 3)), np.zeros(nu)
        if not self.is_disabled(state):
            self._add_own_forces(state, matter, body_forces, mobility_forces)
        return body_forces, mobility_forces

    def calc_potential_energy_contribution(self, state: State) -> float:
        """This element's potential energy (needs Position); 0 when disabled or non-conservative."""
        if self.is_disabled(state):
            return 0.0
        matter = self._forces._matter()
        return float(type(self)._energy_bulk(type(self)._pack([self], matter, state), matter, state))

    def _position_only_here(self) -> bool:
        return self._position_only

    def _group_key(self):
        """What, beside its class, decides which packed set the element joins (elements of one class
        with equal keys are packed together; Force.Jit's: its kernel and position-only flag)."""
        return None

    # ------------------------------------------------------------------ named parts (components)
    def _builtin_modeling_options(self) -> dict:
        """``disabled`` (0 or 1): Simbody's ``Force::disable``, an Instance-stage change."""
        return {"disabled": (2, lambda state: int(self.is_disabled(state)),
                             lambda state, v: self.disable(state) if v else self.enable(state))}

    @output(Stage.Position, float, name="potential_energy")
    def _output_potential_energy(self, state: State) -> float:
        """This element's potential energy (0 when disabled or non-conservative)."""
        return self.calc_potential_energy_contribution(state)

    @output(Stage.Velocity, float, name="power")
    def _output_power(self, state: State) -> float:
        """The rate at which this element does work on the system: sum_b F_b . V_GB + f . u."""
        body_forces, mobility_forces = self.calc_force_contribution(state)
        matter = self._forces._matter()
        power = float(mobility_forces @ matter.get_u(state))
        for b in range(1, matter.get_num_bodies()):
            power += float(np.sum(body_forces[b] * matter.get_mobilized_body(b).get_body_velocity(state)))
        return power

    def _add_own_forces(self, state, matter, body_forces, mobility_forces) -> None:
        cls = type(self)
        cls._calc_bulk(cls._pack([self], matter, state), matter, state, body_forces, mobility_forces)

    def _realize_hook(self, state: State, stage: str) -> None:
        """Per-stage hook for elements with state of their own (Force.Custom); nothing by default."""

    def _singularity_hint(self) -> str:
        return ""

    # ------------------------------------------------------------------ bulk protocol (built-ins)
    #: Whether the kind has a potential energy (the others give 0 without looking at the State).
    _conservative = False
    #: Whether the kind's energy reads body positions (False: only q, so it needs just Instance).
    _energy_needs_positions = True

    @classmethod
    def _pack(cls, elements: list, matter, state: State):
        """Gather the parameters of ``elements`` (at Instance): a ``_Packed`` compiled set for the
        kernel kinds; other kinds may return anything their ``_calc_bulk`` understands."""
        raise NotImplementedError

    @classmethod
    def _calc_bulk(cls, packed, matter, state: State, body_forces: np.ndarray, mobility_forces: np.ndarray) -> None:
        """Add the forces of all packed elements: one kernel call for the compiled kinds.

        ``body_forces`` (nb, 2, 3) and ``mobility_forces`` (nu,) must be C-contiguous float64.
        """
        need = Stage.Position if cls._position_only else Stage.Velocity
        ws = matter._at(state, need, f"Force.{cls.__name__} forces").ws
        packed.raise_if_bad(packed.fs.add(ws, body_forces, mobility_forces), ws)

    @classmethod
    def _energy_bulk(cls, packed, matter, state: State) -> float:
        """Potential energy of all packed elements (0 for non-conservative kinds)."""
        if not cls._conservative:
            return 0.0
        if cls._energy_needs_positions:
            ws = matter._at(state, Stage.Position, f"Force.{cls.__name__} potential energy").ws
        else:
            ws = matter._cache(state).ws
        return float(packed.fs.energy(ws, np.ascontiguousarray(matter.get_q(state), dtype=np.float64)))


class _CustomImplementation:
    """Base for the implementation object of a ``Force.Custom`` (seed §3.1).

    Override ``calc_force`` (required) and, for a conservative force, ``calc_potential_energy``.
    Return True from ``depends_only_on_positions`` when the force depends on nothing above
    Position (no u, z, or discrete variable invalidating Velocity or later): it is then reused
    while only u changes. Optional hooks ``realize_topology(state)`` ... ``realize_report(state)``
    may allocate and compute state and cache of the force's own, through the ``allocate_*`` /
    ``get_*`` helpers of ``get_force_subsystem()``.
    """

    def __init__(self):
        self._force: "Force.Custom | None" = None

    def __deepcopy__(self, memo):
        return self  # the user's object belongs to the topology: copies of a State share it

    def get_force_subsystem(self) -> "GeneralForceSubsystem":
        """The force subsystem holding the Force.Custom that uses this implementation."""
        if self._force is None:
            raise RuntimeError(f"{type(self).__name__} is not attached to a Force.Custom yet")
        return self._force._forces

    def calc_force(self, state: State, body_forces: np.ndarray, particle_forces: np.ndarray,
                   mobility_forces: np.ndarray) -> None:
        """Add this force into ``body_forces`` (nb, 2, 3) and/or ``mobility_forces`` (nu,)."""
        raise NotImplementedError(f"{type(self).__name__} must override calc_force()")

    def calc_potential_energy(self, state: State) -> float:
        """Potential energy of this force (0 for a non-conservative force)."""
        return 0.0

    def depends_only_on_positions(self) -> bool:
        """Whether the force depends on nothing above Position (default False)."""
        return False

    def realize_topology(self, state: State) -> None:
        """Allocate state variables and cache entries of this force."""

    def realize_model(self, state: State) -> None:
        """Model-stage work."""

    def realize_instance(self, state: State) -> None:
        """Instance-stage work."""

    def realize_time(self, state: State) -> None:
        """Time-stage work."""

    def realize_position(self, state: State) -> None:
        """Position-stage work."""

    def realize_velocity(self, state: State) -> None:
        """Velocity-stage work."""

    def realize_dynamics(self, state: State) -> None:
        """Dynamics-stage work (runs before the forces are added)."""

    def realize_acceleration(self, state: State) -> None:
        """Acceleration-stage work."""

    def realize_report(self, state: State) -> None:
        """Report-stage work."""


_EMPTY_PARTICLE_FORCES = np.zeros((0, 3))
_EMPTY_PARTICLE_FORCES.flags.writeable = False


class _Custom(Force):
    """A force written in Python: ``Force.Custom(forces, implementation)`` (seed §3.1)."""

    _is_custom = True
    Implementation = _CustomImplementation

    def __init__(self, forces: "GeneralForceSubsystem", implementation: _CustomImplementation):
        if not isinstance(implementation, _CustomImplementation):
            raise TypeError("Force.Custom: the implementation must subclass Force.Custom.Implementation, got "
                            f"{type(implementation).__name__}")
        if getattr(implementation, "_force", None) is not None:
            raise ValueError("Force.Custom: this implementation object already belongs to another Force.Custom")
        super().__init__(forces)
        implementation._force = self
        implementation._simtk_component = self  # its declared properties and outputs are this element's
        self._impl = implementation
        # Which hooks the user overrode, so unoverridden ones cost nothing per stage.
        base = _CustomImplementation.__dict__
        self._hooks = {s: getattr(implementation, f"realize_{s}") for s in
                       ("topology", "model", "instance", "time", "position", "velocity", "dynamics",
                        "acceleration", "report")
                       if getattr(type(implementation), f"realize_{s}") is not base[f"realize_{s}"]}

    def get_implementation(self) -> _CustomImplementation:
        """The user's implementation object."""
        return self._impl

    def _depends_only_on_positions(self) -> bool:
        return bool(self._impl.depends_only_on_positions())

    def _position_only_here(self) -> bool:
        return self._depends_only_on_positions()

    def _realize_hook(self, state: State, stage: str) -> None:
        hook = self._hooks.get(stage)
        if hook is not None:
            hook(state)

    def _calc_custom(self, state: State, body_forces: np.ndarray, mobility_forces: np.ndarray) -> None:
        self._impl.calc_force(state, body_forces, _EMPTY_PARTICLE_FORCES, mobility_forces)
        if not _forces_finite(body_forces, mobility_forces):
            raise NonFiniteForceError(
                f"{self!r} ({type(self._impl).__name__}.calc_force) produced a non-finite force at t = "
                f"{state.get_time()!r}", self)

    def _add_own_forces(self, state, matter, body_forces, mobility_forces) -> None:
        self._calc_custom(state, body_forces, mobility_forces)

    def calc_potential_energy_contribution(self, state: State) -> float:
        if self.is_disabled(state):
            return 0.0
        return float(self._impl.calc_potential_energy(state))


Force.Custom = _Custom
_Custom.__qualname__ = "Force.Custom"
_Custom.__name__ = "Custom"
