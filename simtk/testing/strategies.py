"""Hypothesis strategies for multibody systems and their states.

>>> from hypothesis import given
>>> from simtk.testing import multibody_systems, states
>>> @given(model=multibody_systems(max_bodies=3), data=st.data())   # doctest: +SKIP
... def test_energy(model, data):
...     state = data.draw(states(model.system))
...
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ..common.stage import Stage
from ..multibody import Force, GeneralForceSubsystem, MobilizedBody, MultibodySystem, SimbodyMatterSubsystem
from ..spatial import Body, Inertia, MassProperties, Rotation, Transform

__all__ = ["DEFAULT_MOBILIZERS", "MultibodyModel", "unit_quaternions", "rotations", "transforms",
           "mass_properties", "mobilizer_kinds", "mobilizer_mixes", "multibody_systems", "states", "nonzero_speeds"]

#: Built-in mobilizers drawn by default: those whose random coordinates in [-0.8, 0.8] are far from
#: any singularity.
DEFAULT_MOBILIZERS = ("Pin", "Slider", "Screw", "Universal", "Cylinder", "BendStretch", "Planar", "Gimbal",
                      "Translation", "Ball", "Free", "Bushing")

_BOUNDED: dict[str, Any] = dict(allow_nan=False, allow_infinity=False)


@dataclass
class MultibodyModel:
    """A system drawn by `multibody_systems`.

    Attributes
    ----------
    system, matter, forces
        The MultibodySystem, its matter subsystem and a GeneralForceSubsystem.
    bodies : list of MobilizedBody
        The mobilized bodies, Ground excluded, in creation order.
    kinds : list of str
        The mobilizer of each body (the name, or the factory's ``__name__``).
    parents : list of int
        Each body's parent index (0 is Ground).
    """

    system: MultibodySystem
    matter: SimbodyMatterSubsystem
    forces: GeneralForceSubsystem
    bodies: list = field(default_factory=list)
    kinds: list = field(default_factory=list)
    parents: list = field(default_factory=list)

    def __repr__(self) -> str:
        tree = ", ".join(f"{k}<-{p}" for k, p in zip(self.kinds, self.parents))
        return f"MultibodyModel({tree})"


@st.composite
def unit_quaternions(draw) -> np.ndarray:
    """Unit quaternions (4,), nearly uniform over rotations."""
    q = np.array(draw(st.lists(st.floats(-1, 1, **_BOUNDED), min_size=4, max_size=4)))
    n = np.linalg.norm(q)
    assume(n > 0.2)
    return q / n


def rotations() -> st.SearchStrategy:
    """Rotations (from unit quaternions)."""
    return unit_quaternions().map(Rotation.from_quaternion)


@st.composite
def transforms(draw, max_offset: float = 0.5) -> Transform:
    """Transforms with a random rotation and an offset in [-max_offset, max_offset]^3."""
    p = draw(st.lists(st.floats(-max_offset, max_offset, **_BOUNDED), min_size=3, max_size=3))
    return Transform(draw(rotations()), p)


@st.composite
def mass_properties(draw, min_mass: float = 0.5, max_mass: float = 2.0, max_com: float = 0.3) -> MassProperties:
    """Physical mass properties: a solid box of random size and orientation, its mass center offset."""
    m = draw(st.floats(min_mass, max_mass, **_BOUNDED))
    dims = np.array(draw(st.lists(st.floats(0.2, 1.0, **_BOUNDED), min_size=3, max_size=3))) ** 2
    a, b, c = dims
    R = draw(rotations()).matrix
    central = R @ np.diag(m / 12.0 * np.array([b + c, a + c, a + b])) @ R.T
    com = np.array(draw(st.lists(st.floats(-max_com, max_com, **_BOUNDED), min_size=3, max_size=3)))
    return MassProperties(m, com, Inertia.from_matrix(central + m * (com @ com * np.eye(3) - np.outer(com, com))))


def mobilizer_kinds(kinds: Sequence = DEFAULT_MOBILIZERS) -> st.SearchStrategy:
    """One mobilizer kind from ``kinds`` (built-in names and/or factories)."""
    return st.sampled_from(tuple(kinds))


def mobilizer_mixes(min_size: int = 1, max_size: int = 5, kinds: Sequence = DEFAULT_MOBILIZERS) -> st.SearchStrategy:
    """Lists of mobilizer kinds: random mixes for the bodies of one system."""
    return st.lists(mobilizer_kinds(kinds), min_size=min_size, max_size=max_size)


def _make(kind, parent, X_PF, body, X_BM):
    if isinstance(kind, str):
        if kind == "Screw":
            return MobilizedBody.Screw(parent, X_PF, body, X_BM, 0.1)
        return getattr(MobilizedBody, kind)(parent, X_PF, body, X_BM)
    return kind(parent, X_PF, body, X_BM)


@st.composite
def multibody_systems(draw, min_bodies: int = 1, max_bodies: int = 4, kinds: Sequence = DEFAULT_MOBILIZERS,
                      chain: bool = False, gravity: bool = True,
                      extend: Callable[[MultibodyModel], None] | None = None) -> MultibodyModel:
    """Random trees of mobilized bodies with random frames and mass properties.

    Parameters
    ----------
    min_bodies, max_bodies : int
        Number of mobilized bodies (Ground excluded).
    kinds : sequence
        Mobilizer kinds to mix: built-in names, or factories ``make(parent, X_PF, body, X_BM)``
        returning your own ``MobilizedBody.Custom``.
    chain : bool
        A serial chain (each body's parent is the previous one) instead of a random tree.
    gravity : bool
        Add ``Force.Gravity`` (9.8 m/s^2 along -y).
    extend : callable, optional
        ``extend(model)`` adds your own forces, constraints, ... to each drawn model.

    Returns
    -------
    SearchStrategy of MultibodyModel
    """
    mix = draw(mobilizer_mixes(min_bodies, max_bodies, kinds))
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    if gravity:
        Force.Gravity(forces, matter, [0, -1, 0], 9.8)
    model = MultibodyModel(system, matter, forces)
    for i, kind in enumerate(mix, start=1):
        parent = i - 1 if chain else draw(st.integers(0, i - 1))
        pb = matter.get_mobilized_body(parent)
        body = Body.Rigid(draw(mass_properties()))
        mb = _make(kind, pb, draw(transforms()), body, draw(transforms()))
        model.bodies.append(mb)
        model.kinds.append(kind if isinstance(kind, str) else getattr(kind, "__name__", repr(kind)))
        model.parents.append(parent)
    if extend is not None:
        extend(model)
    return model


def nonzero_speeds(n: int, u_scale: float = 1.0, u_min: float | None = None) -> st.SearchStrategy:
    """Arrays of ``n`` speeds, each nonzero: a random sign times a magnitude in [u_min, u_scale].

    A zero speed hides every velocity-dependent term of its mobilizer (HDot u, Coriolis, NDot u),
    so a bug there would pass; hypothesis favours 0.0 when drawing from an interval around it.
    ``u_min`` defaults to ``u_scale / 10``; ``u_scale = 0`` gives zeros.
    """
    if not (u_scale >= 0.0 and np.isfinite(u_scale)):
        raise ValueError(f"nonzero_speeds: u_scale must be finite and >= 0, got {u_scale!r}")
    lo = 0.1 * u_scale if u_min is None else float(u_min)
    if u_scale == 0.0:
        return st.just(np.zeros(n))
    if not 0.0 < lo <= u_scale:
        raise ValueError(f"nonzero_speeds: u_min must be in (0, u_scale = {u_scale!r}], got {u_min!r}")
    magnitudes = arrays(np.float64, n, elements=st.floats(lo, u_scale, **_BOUNDED))
    signs = arrays(np.bool_, n, elements=st.booleans())
    return st.tuples(magnitudes, signs).map(lambda ms: np.where(ms[1], -ms[0], ms[0]))


@st.composite
def states(draw, system, q_scale: float = 0.8, u_scale: float = 1.0, z_scale: float = 0.0,
           time: float = 0.0, u_min: float | None = None):
    """States of ``system`` (realized to Model): default q plus noise in [-q_scale, q_scale], every
    u nonzero (a random sign times a magnitude in [u_min, u_scale], `nonzero_speeds`), z default
    plus noise in [-z_scale, z_scale].

    The quaternions of built-in mobilizers are normalized; a Custom mobilizer's coordinates are its
    ``get_default_q()`` plus noise. ``u_min`` defaults to ``u_scale / 10``; ``u_scale = 0`` gives
    states at rest.
    """
    state = system.realize_topology()
    system.realize(state, Stage.Model)
    nq, nu, nz = state.get_nq(), state.get_nu(), state.get_nz()
    if nq:
        state.upd_q()[:] += draw(arrays(np.float64, nq, elements=st.floats(-q_scale, q_scale, **_BOUNDED)))
    if nu:
        state.upd_u()[:] = draw(nonzero_speeds(nu, u_scale, u_min))
    if nz and z_scale > 0:
        state.upd_z()[:] += draw(arrays(np.float64, nz, elements=st.floats(-z_scale, z_scale, **_BOUNDED)))
    matter = getattr(system, "get_matter_subsystem", lambda: None)()
    if matter is not None:
        layout = matter._layout(state)
        q = matter.upd_q(state)
        for b in layout.quaternion_bodies:
            q0 = int(layout.qoff[b])
            n = np.linalg.norm(q[q0:q0 + 4])
            assume(n > 0.1)
            q[q0:q0 + 4] /= n
    state.set_time(time)
    return state
