"""``Force.HuntCrossley``: Simbody's HuntCrossleyForce, compliant contact between surfaces on bodies.

For each contact that detection reports between two surfaces (depth d > 0, unit normal n from
surface 1 into surface 2, radii of curvature R1, R2), with per-surface parameters as given to
``add_surface`` (Simbody's ``HuntCrossleyForce::setBodyParameters``), the law is Simbody's
(Sherman, Seth & Delp 2011, "Simbody: multibody dynamics for biomedical research", and Simbody's
HuntCrossleyForce documentation):

- each stiffness k_i enters as k_i' = k_i^(2/3); s1 = k2'/(k1'+k2'), s2 = 1 - s1; the pair's
  stiffness is k' = k1' s1 and its dissipation c = c1 s1 + c2 s2;
- effective radius R = R1 R2/(R1+R2) (a flat surface, R = inf, leaves the other's radius);
- Hertz force fH = 4/3 k' d sqrt(R k' d), potential energy 2/5 fH d;
- Hunt-Crossley force f = fH (1 + 3/2 c vn), where vn is the rate of penetration; never pulling;
- the contact point is the midway point moved by d (1/2 - s1) along n (toward the softer side);
- friction with the pair's coefficients mu = 2 mu1 mu2/(mu1 + mu2) (0 if both are 0), slip speed
  vs, vr = vs/vt (``transition_velocity``): magnitude f (min(vr, 1) (ud + 2 (us - ud)/(1 + vr^2)) +
  uv vs), opposing the slip.

Friction scales with the applied normal force max(f, 0): a contact whose bodies separate faster
than 2/(3c) applies no force at all (as OpenSim 4.6's Simbody does; checked in the tests).

Flat contacts. Simbody's HuntCrossleyForce only handles point contacts with a finite radius and
skips every other kind; a brick (whose radius is ``inf``) on a half-space or on another brick is
reported by detection as a manifold of vertex contacts with ``R1 = R2 = inf`` (see
``simtk.multibody.contact._detection``), and for those this element applies the law Simbody's
CompliantContactSubsystem applies at each penetrating vertex of a brick on a half-space
(ContactForceGenerator::BrickHalfSpacePenalty in Simbody/src/CompliantContactSubsystem.cpp):

- the stiffnesses themselves (not their 2/3 powers) combine: s1 = k2/(k1+k2), k = k1 s1, and
  c = c1 s1 + c2 s2;
- a linear spring fK = k d, potential energy k d^2/2 (so ``stiffness`` acts as force per length
  per vertex, as in Simbody), with Hunt-Crossley damping f = fK (1 + c vn), never pulling;
- the point and the friction as for the Hertz contacts (Simbody's penalty law uses its smoother
  Stribeck curve there; one friction law per element is kept here).

A lying capsule rests on its end caps: their sphere contacts, with the Hertz law and R = r.

It is a compiled force kind: at each Dynamics realization one kernel call detects the contacts of
every element and applies the law to them (core/contact_force.pxi), so a model with it keeps the
fused realization, the compiled time loop and the batched calls. ``get_contacts`` and the reports
find the same contacts through ``detect`` (cached per change of positions) with the same arithmetic.

Impact events (``impact_events=True`` or ``enable_impact_events``): an ``ImpactEvent`` handler whose
witness is the least signed separation over the surface pairs on different bodies (positive apart,
negative penetrating; ``_detection.min_separation``), triggering when it falls through zero, so that
an integrator localizes first contact in time (and steps onto it instead of over it). Its handler
does nothing unless given a callback. Simbody has no such event for compliant contact.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Callable

import numpy as np

from ... import _core
from ..._core_contact import CONTACT_SHAPES
from ...common._ownership import check_system
from ...common.events import EventTriggerInfo, TriggeredEventHandler
from ...common.output import output
from ...common.property import Property, positive
from ...common.stage import Stage
from ...common.state import State
from ...spatial import Transform
from ..forces.builtin_forces import _body, _element, _real
from ..forces.force import Force, _Packed
from ..tree.mobilized_body import MobilizedBody
from . import _laws
from ._detection import detect, detect_unchecked, min_separation

_HULL = int(CONTACT_SHAPES["ConvexHull"][0])

__all__ = ["ContactReport", "ImpactEvent"]


@dataclass(frozen=True)
class ContactReport:
    """One contact of a ``Force.HuntCrossley`` (all vectors in Ground).

    ``normal`` points from surface 1 into surface 2; ``force`` is the total force on body 2 at
    ``point`` (body 1 gets its opposite there), ``normal_force`` its normal part's magnitude and
    ``friction_force`` its tangential part.
    """

    surface1: int
    surface2: int
    body1: MobilizedBody
    body2: MobilizedBody
    point: np.ndarray
    normal: np.ndarray
    depth: float
    normal_force: float
    friction_force: np.ndarray
    force: np.ndarray
    potential_energy: float
    dissipated_power: float


class ImpactEvent(TriggeredEventHandler):
    """First contact among the surfaces of a ``Force.HuntCrossley``, as a triggered event.

    The witness is the force's ``calc_min_separation`` (Position stage); the event is its falling
    sign change (surfaces coming into contact), not its rising one. ``handle_event`` calls
    ``callback(state)`` if one was given (its true result ends the simulation) and otherwise does
    nothing. Made by ``Force.HuntCrossley.enable_impact_events``.
    """

    def __init__(self, force, callback: Callable[[State], Any] | None = None, localization_window: float = 0.1):
        super().__init__(Stage.Position, EventTriggerInfo(rising=False, falling=True,
                                                          localization_window=localization_window))
        self._force = force
        self.callback = callback
        self.impacts: list[float] = []

    def get_value(self, state: State) -> float:
        return self._force.calc_min_separation(state)

    def handle_event(self, state: State, accuracy: float) -> bool:
        """Record the time in ``impacts`` and call the callback, if any; end only if it says so."""
        self.impacts.append(state.get_time())
        return bool(self.callback(state)) if self.callback is not None else False

    def __repr__(self) -> str:
        return f"<ImpactEvent of {self._force!r}>"


class _Surface:
    __slots__ = ("mobod", "geometry", "X_BS", "law", "clique")

    def __init__(self, mobod, geometry, X_BS, law, clique):
        self.mobod, self.geometry, self.X_BS, self.law, self.clique = mobod, geometry, X_BS, law, clique


class _SelfFiltered:
    """Detection's contacts less those between two surfaces of one body (they would cancel)."""

    def __init__(self, c, keep: np.ndarray):
        for name in ("surf1", "surf2", "p_G", "n_G", "depth", "R1", "R2"):
            setattr(self, name, np.asarray(getattr(c, name))[keep])


def _law(stiffness, dissipation, static_friction, dynamic_friction, viscous_friction) -> tuple:
    what = "Force.HuntCrossley"
    k = _real(stiffness, f"{what}: stiffness", nonnegative=True)
    c = _real(dissipation, f"{what}: dissipation", nonnegative=True)
    us = _real(static_friction, f"{what}: static_friction", nonnegative=True)
    ud = _real(dynamic_friction, f"{what}: dynamic_friction", nonnegative=True)
    uv = _real(viscous_friction, f"{what}: viscous_friction", nonnegative=True)
    if ud > us:
        raise ValueError(f"{what}: dynamic_friction {ud} exceeds static_friction {us}")
    return k, c, us, ud, uv


@_element("HuntCrossley")
class _HuntCrossley(Force):
    """Hunt-Crossley compliant contact among the surfaces added with ``add_surface``.

    Parameters
    ----------
    forces : GeneralForceSubsystem
        The subsystem that holds the element.
    transition_velocity : float, optional
        The slip speed at which static friction peaks (Simbody's default 0.01).
    impact_events : bool, optional
        Add an ``ImpactEvent`` at once (``enable_impact_events()`` with its defaults).
    """

    _conservative = True

    transition_velocity = Property(stage=Stage.Instance, check=positive, attr="_vt",
                                   doc="slip speed of the Stribeck peak (> 0)")

    def __init__(self, forces, transition_velocity: float = 0.01, impact_events: bool = False):
        self._vt = positive(transition_velocity)
        self._surfaces: list[_Surface] = []
        self._excluded: set[tuple[int, int]] = set()
        self._arrays: Any = None  # the surfaces as kernel arrays, built at first use
        self._contacts_index = -1
        self._impact_event: ImpactEvent | None = None
        super().__init__(forces)
        if impact_events:
            self.enable_impact_events()

    # ------------------------------------------------------------------ impact events
    def enable_impact_events(self, callback: Callable[[State], Any] | None = None,
                             localization_window: float = 0.1) -> ImpactEvent:
        """Add (once) an ``ImpactEvent`` to the System, so that integrators localize first contacts.

        Parameters
        ----------
        callback : callable, optional
            ``callback(state)`` at each impact (the State just after first contact, which it may
            change); a true result ends the simulation. None: the event only stops the step there.
        localization_window : float, optional
            The event's time window relative to the integrator's accuracy (``EventTriggerInfo``).

        Returns
        -------
        ImpactEvent
            The handler (its ``impacts`` lists the times it handled). A second call returns the
            same handler with the new callback and window. Adding it is a topology change.
        """
        if self._impact_event is None:
            self._impact_event = ImpactEvent(self, callback, localization_window)
            self._forces.get_system().add_event_handler(self._impact_event)
        else:
            self._impact_event.callback = callback
            self._impact_event.get_trigger_info().set_required_localization_time_window(localization_window)
        return self._impact_event

    def get_impact_event(self) -> ImpactEvent | None:
        """The ``ImpactEvent`` added by ``enable_impact_events``, or None."""
        return self._impact_event

    def calc_min_separation(self, state: State) -> float:
        """The least signed separation between surfaces on different bodies (needs Position).

        Positive when every pair is apart, minus the deepest penetration otherwise; a margin (the
        largest surface size) when nothing is that close. See ``_detection.min_separation``.
        """
        if getattr(state, "_system", None) is not self._forces._system:  # (read below only with two surfaces)
            check_system(f"{self!r}.calc_min_separation()", state, self._forces._system, "State")
        a = self._surface_arrays()
        if a.body.size < 2:
            return a.margin
        R_GS, p_GS = self._surface_poses(state, "impact event witness")
        return min_separation(a.codes, a.params, R_GS, p_GS, a.clique, a.body.astype(np.int32), a.margin,
                              a.vertices, a.exclude)

    # ------------------------------------------------------------------ surfaces
    def add_surface(self, mobod: MobilizedBody, geometry, X_BS: Transform = Transform(), *,
                    stiffness: float = 1.0, dissipation: float = 0.0, static_friction: float = 0.0,
                    dynamic_friction: float = 0.0, viscous_friction: float = 0.0, clique: int = -1) -> int:
        """Add a contact surface fixed on ``mobod`` at frame ``X_BS``; returns its index.

        Parameters
        ----------
        mobod : MobilizedBody
            The body carrying the surface.
        geometry : ContactGeometry
            Its shape (``shape_code`` and ``params`` are all that is read).
        X_BS : Transform
            The surface's frame in the body.
        stiffness, dissipation : float
            Simbody's k (force/area-like, raised to 2/3 internally) and c (s/m).
        static_friction, dynamic_friction, viscous_friction : float
            us >= ud >= 0 and uv (s/m).
        clique : int
            Surfaces of one clique >= 0 never touch each other; -1 is none.
        """
        mobod = _body(mobod, "Force.HuntCrossley.add_surface: mobod", self._forces)
        if not isinstance(X_BS, Transform):
            raise TypeError(f"Force.HuntCrossley.add_surface: X_BS must be a Transform, got {type(X_BS).__name__}")
        if not hasattr(geometry, "shape_code") or not hasattr(geometry, "params"):
            raise TypeError(f"Force.HuntCrossley.add_surface: expected a ContactGeometry, got {type(geometry).__name__}")
        if isinstance(clique, bool) or int(clique) != clique or clique < -1:
            raise ValueError(f"Force.HuntCrossley.add_surface: clique must be an integer >= -1, got {clique!r}")
        law = _law(stiffness, dissipation, static_friction, dynamic_friction, viscous_friction)
        self._surfaces.append(_Surface(mobod, geometry, X_BS, law, int(clique)))
        self._changed()
        return len(self._surfaces) - 1

    def exclude_pair(self, surface1: int, surface2: int) -> None:
        """Let two surfaces never touch each other (a topology change).

        For filters that cliques cannot express (MuJoCo's contype/conaffinity bits and its
        parent-child rule, say); the pair is checked after the broad phase.

        Parameters
        ----------
        surface1, surface2 : int
            Two different surface indices, as ``add_surface`` returned them (in either order).
        """
        n = len(self._surfaces)
        for x in (surface1, surface2):
            if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or not 0 <= x < n:
                raise ValueError(f"{self!r}.exclude_pair: {x!r} is not a surface index (0..{n - 1})")
        if surface1 == surface2:
            raise ValueError(f"{self!r}.exclude_pair: a surface never touches itself (got {surface1} twice)")
        self._excluded.add((int(min(surface1, surface2)), int(max(surface1, surface2))))
        self._changed()

    def get_excluded_pairs(self) -> list[tuple[int, int]]:
        """The pairs ``(i, j)``, ``i < j``, given to ``exclude_pair``, sorted."""
        return sorted(self._excluded)

    def set_surface_parameters(self, index: int, stiffness: float, dissipation: float, static_friction: float,
                               dynamic_friction: float, viscous_friction: float) -> None:
        """Simbody's ``setBodyParameters``: replace the material of surface ``index`` (a topology change)."""
        self._surfaces[index].law = _law(stiffness, dissipation, static_friction, dynamic_friction, viscous_friction)
        self._changed()

    def get_surface_parameters(self, index: int) -> dict:
        """The material of surface ``index``: stiffness, dissipation, static/dynamic/viscous friction."""
        names = ("stiffness", "dissipation", "static_friction", "dynamic_friction", "viscous_friction")
        return dict(zip(names, self._surfaces[index].law))

    def get_num_surfaces(self) -> int:
        """How many surfaces were added."""
        return len(self._surfaces)

    def get_surface_body(self, index: int) -> MobilizedBody:
        """The body carrying surface ``index``."""
        return self._surfaces[index].mobod

    def set_transition_velocity(self, v: float) -> None:
        """The slip speed vt at which static friction peaks (> 0)."""
        self.set_property("transition_velocity", v)

    def get_transition_velocity(self) -> float:
        """The slip speed vt at which static friction peaks."""
        return self._vt

    def _changed(self) -> None:
        self._arrays = None
        self._forces.invalidate_subsystem_topology_cache()

    def _surface_arrays(self) -> SimpleNamespace:
        """The surfaces packed for detection and for the kernel (rebuilt after a change)."""
        if self._arrays is None:
            s = self._surfaces
            ns = len(s)
            law = np.array([x.law for x in s], dtype=np.float64).reshape(ns, 5)
            law[:, 0] **= 2.0 / 3.0  # Simbody keeps k^(2/3): the combination rules are written in it
            params = np.array([x.geometry.params for x in s], dtype=np.float64).reshape(ns, 3)
            # the hulls' vertices, stacked; a hull's third parameter is its first row there
            verts, nrow = [], 0
            for j, x in enumerate(s):
                if x.geometry.kind == "ConvexHull":
                    v = x.geometry.vertices
                    params[j, 2] = nrow
                    verts.append(v)
                    nrow += v.shape[0]
            excl = sorted(self._excluded)
            self._arrays = SimpleNamespace(
                body=np.array([x.mobod._index for x in s], dtype=np.int64),
                codes=np.array([x.geometry.shape_code for x in s], dtype=np.int32),
                params=params,
                vertices=np.ascontiguousarray(np.concatenate(verts)) if verts else None,
                exclude=np.array(excl, dtype=np.float64).reshape(-1, 2) if excl else None,
                R_BS=np.array([x.X_BS.R.matrix for x in s], dtype=np.float64).reshape(ns, 3, 3),
                p_BS=np.array([x.X_BS.p for x in s], dtype=np.float64).reshape(ns, 3),
                clique=np.array([x.clique for x in s], dtype=np.int32),
                law=law)
            # the impact witness's broad-phase margin: the largest surface size (1 if all unbounded)
            sizes = np.where((self._arrays.codes == _HULL)[:, None], params * [1.0, 0.0, 0.0], params)
            self._arrays.margin = float(sizes.max(initial=0.0)) or 1.0
        return self._arrays

    def _surface_poses(self, state: State, what: str) -> tuple[np.ndarray, np.ndarray]:
        """R_GS, p_GS of every surface in ``state`` (Position), by the products the compiled kind uses."""
        ws = self._forces._matter()._at(state, Stage.Position, f"{self!r}: {what}").ws
        a = self._surface_arrays()
        n = a.body.shape[0]
        R_GS, p_GS = np.empty((n, 3, 3)), np.empty((n, 3))
        _core._k.surface_poses(ws, a.body, a.R_BS, a.p_BS, R_GS, p_GS)
        return R_GS, p_GS

    # ------------------------------------------------------------------ contact set (Position)
    def _realize_hook(self, state: State, stage: str) -> None:
        if stage == "topology":
            self._contacts_index = self._forces.allocate_lazy_cache_entry(state, Stage.Position, None)

    def _contacts(self, state: State):
        """The contacts in ``state`` (detected once per change of positions, then cached)."""
        forces = self._forces
        if forces.is_cache_value_realized(state, self._contacts_index):
            return forces.get_cache_entry(state, self._contacts_index)
        a = self._surface_arrays()
        R_GS, p_GS = self._surface_poses(state, "contact detection")
        if _core.all_finite(R_GS) and _core.all_finite(p_GS):
            # valid by construction (geometry checked when added, poses are products of rotations)
            contacts: Any = detect_unchecked(a.codes, a.params, R_GS, p_GS, a.clique, a.vertices, a.exclude)
        else:  # the checked path says what is wrong
            contacts = detect(a.codes, a.params, R_GS, p_GS, a.clique, a.vertices,
                              None if a.exclude is None else a.exclude.astype(np.int64))
        s1, s2 = np.asarray(contacts.surf1, dtype=np.int64), np.asarray(contacts.surf2, dtype=np.int64)
        same = a.body[s1] == a.body[s2]
        if same.any():  # a body touching itself: equal and opposite forces at one point, and no energy
            contacts = _SelfFiltered(contacts, ~same)
        forces.set_cache_entry(state, self._contacts_index, contacts)
        forces.mark_cache_value_realized(state, self._contacts_index)
        return contacts

    def get_contacts(self, state: State):
        """The current contact set (``surf1``, ``surf2``, ``p_G``, ``n_G``, ``depth``, ``R1``, ``R2``); needs Position."""
        return self._contacts(state)

    # ------------------------------------------------------------------ evaluation (Dynamics)
    def _evaluate(self, state: State, body_forces: np.ndarray) -> tuple[float, np.ndarray]:
        matter = self._forces._matter()
        ws = matter._at(state, Stage.Velocity, f"{self!r} forces").ws
        contacts = self._contacts(state)
        a = self._surface_arrays()
        return _laws.hunt_crossley_law(a.body, a.law, self._vt, contacts, ws, body_forces)

    @classmethod
    def _pack(cls, elements, matter, state):
        """The compiled force kind "HuntCrossley" (core/contact_force.pxi): one row per surface, each
        element's consecutive. It detects and applies the contacts of every element in one kernel call,
        with the arithmetic of ``_contacts`` and ``_evaluate`` (so their reports describe its forces),
        in the fused realization, the compiled time loop and the batched calls too."""
        rows, bodies, stations, aux = [], [], [], []
        naux = 0
        for number, e in enumerate(elements):
            a = e._surface_arrays()
            n = a.body.shape[0]
            prm = a.params.copy()
            if a.vertices is not None:  # the hulls' first rows become offsets (in doubles) into aux
                hull = a.codes == _HULL
                prm[hull, 2] = naux + 3.0 * prm[hull, 2]
                aux.append(a.vertices.reshape(-1))
                naux += a.vertices.size
            excl = np.array([[float(naux), 0.0]])
            if a.exclude is not None:
                excl[0, 1] = a.exclude.shape[0]
                aux.append(a.exclude.reshape(-1))
                naux += a.exclude.size
            rows.append(np.concatenate([np.full((n, 1), float(number)), a.clique[:, None] + 1.0,
                                        a.codes[:, None].astype(np.float64), prm, a.R_BS.reshape(n, 9),
                                        a.law, np.full((n, 1), e._vt), np.repeat(excl, n, axis=0)], axis=1))
            bodies.append(a.body)
            stations.append(a.p_BS)
        params = np.concatenate(rows) if rows else np.zeros((0, 23))
        return _Packed(_core.make_force_set("HuntCrossley", params=params, bodies=np.concatenate(bodies)[:, None],
                                            stations=np.concatenate(stations)[:, None, :],
                                            aux=np.concatenate(aux) if aux else None), elements)

    # ------------------------------------------------------------------ outputs
    def get_contact_reports(self, state: State) -> list[ContactReport]:
        """One report per current contact (needs Velocity)."""
        nb = self._forces._matter().get_num_bodies()
        scratch = np.zeros((nb, 2, 3))
        _, rep = self._evaluate(state, scratch)
        c = self._contacts(state)
        out = []
        for i in range(rep.shape[0]):
            s1, s2 = int(c.surf1[i]), int(c.surf2[i])
            n = np.array(c.n_G[i], dtype=float)
            friction = rep[i, 4:7].copy()
            out.append(ContactReport(
                surface1=s1, surface2=s2, body1=self._surfaces[s1].mobod, body2=self._surfaces[s2].mobod,
                point=rep[i, 0:3].copy(), normal=n, depth=float(c.depth[i]), normal_force=float(rep[i, 3]),
                friction_force=friction, force=rep[i, 3] * n + friction, potential_energy=float(rep[i, 7]),
                dissipated_power=float(rep[i, 8])))
        return out

    @output(Stage.Velocity, list, name="contacts")
    def _output_contacts(self, state: State) -> list:
        """Per-contact reports (``ContactReport``): bodies, point, normal, depth, forces, energy."""
        if self.is_disabled(state):
            return []
        return self.get_contact_reports(state)

    def calc_dissipated_power(self, state: State) -> float:
        """Power the contacts take out of the system (damping and friction, >= 0 up to round-off)."""
        if self.is_disabled(state):
            return 0.0
        nb = self._forces._matter().get_num_bodies()
        _, rep = self._evaluate(state, np.zeros((nb, 2, 3)))
        return float(np.sum(rep[:, 8]))

    @output(Stage.Velocity, float, name="dissipated_power")
    def _output_dissipated_power(self, state: State) -> float:
        """Power the contacts take out of the system (damping and friction)."""
        return self.calc_dissipated_power(state)
