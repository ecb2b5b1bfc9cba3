"""DeformableBody: particles beside the rigid bodies, as a Subsystem of their own (seed 003, SOFA).

A deformable body's free particles own their positions (q, 3 per particle, in Ground) and velocities
(u = qdot) in the same State as the rigid bodies. A fixed particle stays where it was given (SOFA's
FixedConstraint: it has no variables); an attached one rides on a rigid body's station (SOFA's
RigidMapping, a mechanical mapping: its position and velocity come from the body, and the forces on
it go to the body, at that station). Realization:

=============  ===========================================================================
Instance       the gravity of the System's enabled ``Force.UniformGravity`` elements
Position       every particle's position (n, 3)
Velocity       every particle's velocity (n, 3); qdot = u
Dynamics       the particle forces (n, 3): the elements', gravity m g on free particles, the
               loads; an attached particle's force is added to its body's (the matter's
               accumulator, so the rigid bodies' accelerations include it)
Acceleration   udot = f / m on free particles
=============  ===========================================================================

The System realizes the matter subsystem first at every stage and the others in the order they
joined, so the rigid bodies' positions and velocities are current when the particles need them, and
the body forces are added before the matter's Acceleration reads them.

Cutting (`remove_segments`, `remove_tetrahedra`, `remove_triangles`, `cut`) is a topology change: the
elements keep their construction indices and a mask per kind says which are gone, so the compiled sets,
the energy and the surface are made from the rest at the next Topology, and `System.migrate_state`
carries each particle's variables by their path (``particle_<i>/x``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _core, _core_deformable
from ..common.output import output
from ..common.stage import Stage
from ..common.subsystem import Subsystem
from ..multibody.tree.mobilized_body import MobilizedBody
from . import _cutting, _fem

if TYPE_CHECKING:
    from ..common.state import State
    from ..multibody.multibody_system import MultibodySystem

__all__ = ["DeformableBody"]


def _points(points: Any, where: str) -> np.ndarray:
    try:
        x = np.array(points, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{where}: points: expected an (n, 3) array of numbers, got {type(points).__name__}") from None
    if x.ndim != 2 or x.shape[1] != 3 or len(x) == 0:
        raise ValueError(f"{where}: points: expected an (n, 3) array with n >= 1, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError(f"{where}: points: particle {int(np.flatnonzero(~np.isfinite(x).all(1))[0])} is not finite")
    return np.ascontiguousarray(x)


def _per_item(value: Any, n: int, what: str, where: str, positive: bool) -> np.ndarray:
    try:
        a = np.array(np.broadcast_to(np.asarray(value, dtype=np.float64), (n,)))
    except (TypeError, ValueError):
        raise ValueError(f"{where}: {what}: expected a number or {n} numbers, got {value!r}") from None
    bad = ~np.isfinite(a) | ((a <= 0) if positive else (a < 0))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{where}: {what}[{k}] = {a[k]!r} must be finite and {'> 0' if positive else '>= 0'}")
    return a


def _vector(v: Any, what: str, where: str) -> np.ndarray:
    try:
        a = np.array(v, dtype=np.float64).reshape(3)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: {what}: expected 3 numbers, got {v!r}") from None
    if not np.isfinite(a).all():
        raise ValueError(f"{where}: {what} {a.tolist()} is not finite")
    return a


class DeformableBody(Subsystem):
    """Particles with masses, joined by elements (springs, tetrahedra, membrane triangles), beside the rigid
    bodies of ``system``.

    Build one with `from_segments`, `from_tetrahedra` or `from_triangles`. Fixing and attaching
    particles changes what the State holds, so it is done before the System's Topology is realized
    (or the Topology is realized anew).

    Parameters
    ----------
    system : MultibodySystem
        The System it joins (after its matter and force subsystems).
    points : array_like, shape (n, 3)
        The particles' initial positions in Ground (m).
    masses : float or array_like, shape (n,)
        Each particle's mass (kg), > 0. A fixed or attached particle's mass does not act (give an
        attached particle's mass to its body).
    name : str
    """

    def __init__(self, system: "MultibodySystem", points: Any, masses: Any, name: str = "deformable"):
        where = f"DeformableBody {name!r}"
        x0 = _points(points, where)
        m = _per_item(masses, len(x0), "masses", where, positive=True)
        super().__init__(None, name)
        system.get_matter_subsystem()  # a MultibodySystem with its matter (raises otherwise)
        self._x0 = x0
        self._mass = m
        self._fixed = np.zeros(len(x0), dtype=bool)
        self._attached: dict[int, tuple[MobilizedBody, np.ndarray]] = {}
        # the element sets, compiled at Topology: each has add_forces(x, v, f) -> elastic energy and
        # add_derivative_product(x, dx, dv, alpha, beta, out, definite) (see _core_deformable.SpringSet)
        self._element_sets: list = []
        self._spring_data = (np.zeros((0, 2), dtype=np.int64), np.zeros(0), np.zeros(0), np.zeros(0))
        self._tet_data: dict | None = None
        self._tri_data: dict | None = None
        # kind -> which of its elements were removed (cutting), by their construction index; made on first use
        self._removed: dict[str, np.ndarray] = {}
        self._matter = system.get_matter_subsystem()
        system.adopt_subsystem(self)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_segments(cls, system: "MultibodySystem", points: Any, segments: Any, masses: Any, stiffness: Any,
                      damping: Any = 0.0, *, rest_lengths: Any = None, name: str = "deformable") -> "DeformableBody":
        """Particles joined by springs (SOFA's StiffSpringForceField).

        Parameters
        ----------
        system : MultibodySystem
        points : array_like, shape (n, 3)
            Initial particle positions in Ground (m).
        segments : array_like of int, shape (ns, 2)
            The particles each spring joins (two different particles).
        masses : float or array_like, shape (n,)
            Particle masses (kg), > 0.
        stiffness : float or array_like, shape (ns,)
            Spring stiffness (N/m), >= 0.
        damping : float or array_like, shape (ns,)
            Damping along each spring (N s/m), >= 0: a force c (v_j - v_i) . e along it.
        rest_lengths : array_like, shape (ns,), optional
            Natural lengths (m), >= 0; by default the distances between ``points``.
        name : str

        Returns
        -------
        DeformableBody
        """
        where = f"DeformableBody {name!r}"
        x0 = _points(points, where)
        n = len(x0)
        try:
            seg = np.array(segments, dtype=np.int64).reshape(-1, 2) if len(segments) else np.zeros((0, 2), np.int64)
        except (TypeError, ValueError):
            raise TypeError(f"{where}: segments: expected an (ns, 2) array of particle indices, got {segments!r}") from None
        bad = (seg < 0) | (seg >= n)
        if bad.any():
            k = int(np.flatnonzero(bad.any(1))[0])
            raise ValueError(f"{where}: segment {k} = {seg[k].tolist()} names a particle outside 0..{n - 1}")
        same = seg[:, 0] == seg[:, 1]
        if same.any():
            k = int(np.flatnonzero(same)[0])
            raise ValueError(f"{where}: segment {k} joins particle {int(seg[k, 0])} to itself")
        ns = len(seg)
        k_s = _per_item(stiffness, ns, "stiffness", where, positive=False)
        c_s = _per_item(damping, ns, "damping", where, positive=False)
        L0 = (np.linalg.norm(x0[seg[:, 1]] - x0[seg[:, 0]], axis=1) if rest_lengths is None
              else _per_item(rest_lengths, ns, "rest_lengths", where, positive=False))
        body = cls(system, x0, masses, name)
        body._spring_data = (seg, k_s, L0, c_s)
        return body

    @classmethod
    def from_tetrahedra(cls, system: "MultibodySystem", points: Any, tets: Any, density: Any, young: Any,
                        poisson: Any, damping: Any = 0.0, *, mass: str = "lumped",
                        name: str = "deformable") -> "DeformableBody":
        """A solid meshed with linear tetrahedra, corotational linear elasticity (SOFA's
        TetrahedronFEMForceField, method "large"/"polar"; Mueller and Gross 2004).

        Each tet's rotation is the polar factor of its deformation gradient; the strain and stress are
        linear in the rotated frame, so large rotations cost no spurious energy (the energy is exactly
        conserved without damping). The implicit step's stiffness keeps the rotations frozen (positive
        semidefinite). An inverted tet during motion uses SOFA's QR-like frame instead.

        Parameters
        ----------
        system : MultibodySystem
        points : array_like, shape (n, 3)
            The rest positions in Ground (m), also the initial ones.
        tets : array_like of int, shape (nt, 4)
            Each tet's vertices (a, b, c, d), with (b - a) x (c - a) . (d - a) > 0.
        density : float or array_like, shape (nt,)
            Mass density (kg/m^3), > 0.
        young : float or array_like, shape (nt,)
            Young's modulus (Pa), > 0.
        poisson : float or array_like, shape (nt,)
            Poisson's ratio, in (-1, 0.5).
        damping : float or (float, float)
            Rayleigh damping: beta_K (s), or (alpha_M (1/s), beta_K (s)); the damping force is
            -(alpha_M M v + beta_K K v).
        mass : {"lumped"}
            density V / 4 to each vertex of each tet. ("consistent" is refused: the particles' State and
            the implicit step use a diagonal mass.)
        name : str

        Returns
        -------
        DeformableBody
        """
        where = f"DeformableBody {name!r}"
        x0 = _points(points, where)
        t = _fem.check_tets(tets, len(x0), where)
        if mass != "lumped":
            raise ValueError(f"{where}: mass={mass!r}: only 'lumped' is available (a consistent mass would "
                             f"need a mass solve in every acceleration and in the implicit step's operator)")
        Bm, vol = _fem.rest_geometry(x0, t, where)
        mu, lam = _fem.lame(young, poisson, len(t), where)
        alpha_m, beta_k = _fem.rayleigh(damping, where)
        m = _fem.lumped_masses(len(x0), t, vol, density, where)
        body = cls(system, x0, m, name)
        body._tet_data = dict(tets=t, Bm=Bm, vol=vol, mu=mu, lam=lam, alpha_m=alpha_m, beta_k=beta_k)
        return body

    @classmethod
    def from_triangles(cls, system: "MultibodySystem", points: Any, triangles: Any, density: Any, young: Any,
                       poisson: Any, thickness: Any, damping: Any = 0.0, *,
                       name: str = "deformable") -> "DeformableBody":
        """A membrane of linear triangles (a cloth, a thin sheet), corotational plane stress (SOFA's
        TriangularFEMForceField, method "large"), without bending stiffness.

        Each triangle's rotation is the polar factor of its 3 x 2 deformation gradient (closed form);
        the energy is exactly conserved without damping. A flat membrane resists no out-of-plane
        motion until stretched: hang it, or pair it with mass and an implicit step.

        Parameters
        ----------
        system : MultibodySystem
        points : array_like, shape (n, 3)
            The rest positions in Ground (m), also the initial ones.
        triangles : array_like of int, shape (nt, 3)
        density : float or array_like, shape (nt,)
            Mass density (kg/m^3), > 0; each vertex gets density h A / 3 of each of its triangles.
        young, poisson : float or array_like, shape (nt,)
            Young's modulus (Pa, > 0) and Poisson's ratio (in (-1, 0.5)).
        thickness : float or array_like, shape (nt,)
            The sheet's thickness h (m), > 0.
        damping : float or (float, float)
            Rayleigh damping beta_K (s), or (alpha_M (1/s), beta_K (s)), as `from_tetrahedra`.
        name : str

        Returns
        -------
        DeformableBody
        """
        where = f"DeformableBody {name!r}"
        x0 = _points(points, where)
        t = _fem.check_tets(triangles, len(x0), where, 3, "triangle")
        Bm, area = _fem.triangle_rest_geometry(x0, t, where)
        mu, lam = _fem.lame(young, poisson, len(t), where)
        ha = _fem.thicknesses(thickness, len(t), where) * area
        alpha_m, beta_k = _fem.rayleigh(damping, where)
        m = _fem.lumped_masses(len(x0), t, ha, density, where)
        body = cls(system, x0, m, name)
        body._tri_data = dict(tris=t, Bm=Bm, ha=ha, mu=mu, lam=2 * mu * lam / (lam + 2 * mu), alpha_m=alpha_m,
                              beta_k=beta_k)
        return body

    def get_surface_triangles(self) -> np.ndarray:
        """The surface to draw: the boundary of the remaining tets (the faces of one tet only), each
        counterclockwise seen from outside, and the remaining membrane triangles; (nf, 3) particle indices.
        After a cut the faces the cut opened are part of it, so each piece's surface is closed."""
        parts = [np.zeros((0, 3), dtype=np.int64)]
        tets = self.get_tetrahedra()
        if len(tets):
            parts.append(_fem.surface_triangles(tets))
        parts.append(self.get_triangles())
        return np.concatenate(parts)

    def fix(self, indices: Any) -> None:
        """Hold these particles where they are (SOFA's FixedConstraint): they have no variables."""
        idx = self._indices(indices, "fix")
        clash = [i for i in idx if i in self._attached]
        if clash:
            raise ValueError(f"{self._where()}.fix: particle {clash[0]} is attached to a body; it cannot also be fixed")
        self.invalidate_subsystem_topology_cache()
        self._fixed[idx] = True

    def attach(self, index: int, mobod: MobilizedBody, station: Any) -> None:
        """Make particle ``index`` ride on ``mobod`` at ``station`` (in the body's frame, m); the forces
        on it act on the body there (SOFA's RigidMapping as a mechanical mapping)."""
        (i,) = self._indices([index], "attach")
        if not isinstance(mobod, MobilizedBody):
            raise TypeError(f"{self._where()}.attach: expected a MobilizedBody, got {type(mobod).__name__}")
        if mobod.get_matter_subsystem() is not self._matter:
            raise ValueError(f"{self._where()}.attach: {mobod!r} is not in this System's matter subsystem")
        try:
            s = np.array(station, dtype=np.float64).reshape(3)
        except (TypeError, ValueError):
            raise ValueError(f"{self._where()}.attach: station: expected 3 numbers, got {station!r}") from None
        if not np.isfinite(s).all():
            raise ValueError(f"{self._where()}.attach: station {s.tolist()} is not finite")
        if self._fixed[i]:
            raise ValueError(f"{self._where()}.attach: particle {i} is fixed; it cannot also be attached")
        self.invalidate_subsystem_topology_cache()
        self._attached[i] = (mobod, s)

    def _indices(self, indices: Any, what: str) -> list[int]:
        try:
            idx = [int(i) for i in np.atleast_1d(np.asarray(indices))]
        except (TypeError, ValueError):
            raise TypeError(f"{self._where()}.{what}: expected particle indices, got {indices!r}") from None
        for i in idx:
            if not 0 <= i < len(self._x0):
                raise ValueError(f"{self._where()}.{what}: particle {i} is outside 0..{len(self._x0) - 1}")
        return idx

    # ------------------------------------------------------------------ cutting (topology changes)
    def remove_segments(self, indices: Any) -> None:
        """Remove springs (a topology change: cutting).

        Do it inside ``system.request_change(change)`` (a TimeStepper applies it between steps) or follow
        it by ``system.migrate_state(old_state)``: the new State keeps every particle's position and
        velocity. The particles keep their masses (a cut separates material and removes none, so the
        momentum is unchanged); a particle left without elements falls freely.

        Parameters
        ----------
        indices : int or array_like of int
            Springs by their index in ``segments`` as given to `from_segments` (an element keeps its index
            however many were removed before it). An index out of range, listed twice or removed already
            is refused before anything changes.
        """
        self._remove("segment", indices, "remove_segments")

    def remove_tetrahedra(self, indices: Any) -> None:
        """Remove tets (a topology change: cutting), by their index in ``tets`` as given to
        `from_tetrahedra`; as `remove_segments`. The faces the removal opens join the surface
        (`get_surface_triangles`).

        Parameters
        ----------
        indices : int or array_like of int
        """
        self._remove("tet", indices, "remove_tetrahedra")

    def remove_triangles(self, indices: Any) -> None:
        """Remove membrane triangles (a topology change: cutting), by their index in ``triangles`` as
        given to `from_triangles`; as `remove_segments`.

        Parameters
        ----------
        indices : int or array_like of int
        """
        self._remove("triangle", indices, "remove_triangles")

    def cut(self, plane_point: Any, plane_normal: Any, positions: Any = None) -> dict[str, np.ndarray]:
        """Remove every remaining element that crosses a plane: one with a vertex strictly on each side
        (a topology change; see `remove_segments` for how to apply it and what the particles keep).

        An element that only touches the plane (a vertex on it, within rounding) is not cut, so a plane
        through a layer of mesh nodes cuts nothing: put it between them.

        Parameters
        ----------
        plane_point : array_like, shape (3,)
            A point of the plane, in Ground (m).
        plane_normal : array_like, shape (3,)
            The plane's normal (any nonzero length).
        positions : array_like, shape (n, 3), optional
            The particles' positions to judge the sides by (e.g. ``get_positions(state).copy()`` to cut
            the deformed body); by default the rest positions the body was built with.

        Returns
        -------
        dict of str to ndarray of int64
            For each kind the body has ("segment", "tet", "triangle"), the indices removed (possibly none).
        """
        where = f"{self._where()}.cut"
        p = _vector(plane_point, "plane_point", where)
        nrm = _vector(plane_normal, "plane_normal", where)
        length = float(np.linalg.norm(nrm))
        if not length > 0.0:
            raise ValueError(f"{where}: plane_normal must be nonzero, got {nrm.tolist()}")
        x = self._x0 if positions is None else _points(positions, where)
        if len(x) != len(self._x0):
            raise ValueError(f"{where}: positions: expected {len(self._x0)} rows, got {len(x)}")
        out = {}
        for kind in self._element_kinds():
            conn = self._connectivity(kind)
            hit = _cutting.crossing(x, conn, p, nrm / length) & ~self._removed_mask(kind)
            out[kind] = np.flatnonzero(hit).astype(np.int64)
        for kind, idx in out.items():  # all checked (by construction) before any is removed
            if len(idx):
                self._removed_mask(kind)[idx] = True
        if any(len(idx) for idx in out.values()):
            self.invalidate_subsystem_topology_cache()
        return out

    def get_remaining_element_indices(self, kind: str) -> np.ndarray:
        """The construction indices of the elements of ``kind`` ("segment", "tet" or "triangle") not
        removed, ascending: row k of `get_segments`, `get_tetrahedra` or `get_triangles` is element
        ``get_remaining_element_indices(kind)[k]``."""
        if kind not in _cutting.KINDS:
            raise ValueError(f"{self._where()}: element kind {kind!r}: expected one of {sorted(_cutting.KINDS)}")
        return np.flatnonzero(~self._removed_mask(kind)).astype(np.int64)

    def _element_kinds(self) -> list[str]:
        return [k for k in _cutting.KINDS if len(self._connectivity(k))]

    def _connectivity(self, kind: str) -> np.ndarray:
        """Every element of ``kind`` as built, removed ones included."""
        if kind == "segment":
            return self._spring_data[0]
        data = self._tet_data if kind == "tet" else self._tri_data
        key = "tets" if kind == "tet" else "tris"
        return data[key] if data is not None else np.zeros((0, 4 if kind == "tet" else 3), dtype=np.int64)

    def _removed_mask(self, kind: str) -> np.ndarray:
        mask = self._removed.get(kind)
        if mask is None or len(mask) != len(self._connectivity(kind)):
            mask = self._removed[kind] = np.zeros(len(self._connectivity(kind)), dtype=bool)
        return mask

    def _remaining_connectivity(self, kind: str) -> np.ndarray:
        conn = np.ascontiguousarray(self._connectivity(kind)[~self._removed_mask(kind)])
        conn.flags.writeable = False
        return conn

    def _remaining_data(self, kind: str) -> dict | None:
        """The tet or triangle data of the remaining elements (None when there are none)."""
        data = self._tet_data if kind == "tet" else self._tri_data
        keep = ~self._removed_mask(kind)
        if data is None or not keep.any():
            return None
        return {k: (np.ascontiguousarray(v[keep]) if isinstance(v, np.ndarray) else v) for k, v in data.items()}

    def _remove(self, kind: str, indices: Any, what: str) -> None:
        where = f"{self._where()}.{what}"
        if not len(self._connectivity(kind)):
            raise ValueError(f"{where}: the body has no {kind}s")
        idx = _cutting.removal_indices(where, kind, indices, self._removed_mask(kind))
        if len(idx):
            self._removed_mask(kind)[idx] = True
            self.invalidate_subsystem_topology_cache()

    # ------------------------------------------------------------------ sizes and names
    def get_num_particles(self) -> int:
        """All particles: free, fixed and attached."""
        return len(self._x0)

    def get_free_particles(self) -> np.ndarray:
        """Indices of the particles that own variables (neither fixed nor attached), in State order."""
        free = ~self._fixed
        free[list(self._attached)] = False
        return np.flatnonzero(free)

    def get_segments(self) -> np.ndarray:
        """The particles each remaining spring joins, (ns, 2), read-only (empty for a body without springs)."""
        return self._remaining_connectivity("segment")

    def get_tetrahedra(self) -> np.ndarray:
        """The vertices of each remaining tet, (nt, 4), read-only (empty for a body without tets)."""
        return self._remaining_connectivity("tet")

    def get_triangles(self) -> np.ndarray:
        """The vertices of each remaining membrane triangle, (nt, 3), read-only (empty without them)."""
        return self._remaining_connectivity("triangle")

    def get_fixed_particles(self) -> np.ndarray:
        """Indices of the fixed particles (`fix`), ascending."""
        return np.flatnonzero(self._fixed)

    def get_attached_particles(self) -> np.ndarray:
        """Indices of the particles attached to rigid bodies (`attach`), ascending."""
        return np.array(sorted(self._attached), dtype=np.int64)

    def get_masses(self) -> np.ndarray:
        """The particles' masses (n,), read-only."""
        m = self._mass.view()
        m.flags.writeable = False
        return m

    def _state_variable_names(self, state: "State") -> tuple[list[str], list[str], list[str]]:
        """``particle_<i>/x`` (``y``, ``z``) for every q and ``particle_<i>/vx`` (``vy``, ``vz``) for every u,
        i the particle's index: a particle's variables keep their paths whatever changes around it
        (a cut, another particle fixed), so `System.migrate_state` carries them."""
        qn = [f"particle_{i}/{c}" for i in self._free for c in ("x", "y", "z")]
        un = [f"particle_{i}/{c}" for i in self._free for c in ("vx", "vy", "vz")]
        return qn, un, []

    def _describe_variable(self, state: "State", kind: str, i: int) -> str:
        if kind in ("q", "u") and i < 3 * len(self._free):
            return f"{kind}[{i}] (particle {int(self._free[i // 3])} {'xyz'[i % 3]} of {self._where()})"
        return super()._describe_variable(state, kind, i)

    # ------------------------------------------------------------------ elements
    def _make_element_sets(self) -> list:
        """The compiled element sets (Topology): the remaining springs, and what subclasses add."""
        seg, k_s, L0, c_s = self._spring_data
        keep = ~self._removed_mask("segment")
        if not keep.any():
            return []
        return [_core_deformable.SpringSet(len(self._x0), seg[keep], k_s[keep], L0[keep], c_s[keep])]

    def _add_element_forces(self, x: np.ndarray, v: np.ndarray, f: np.ndarray) -> float:
        """f += every element's force at (x, v), (n, 3); their elastic energy."""
        return float(sum(es.add_forces(x, v, f) for es in self._element_sets))

    def _add_element_derivative_product(self, x: np.ndarray, dx: np.ndarray, dv: np.ndarray, alpha: float,
                                        beta: float, out: np.ndarray, definite: bool = True) -> None:
        """out += alpha K dx + beta D dv over every element (K = -df/dx, D = -df/dv at x)."""
        for es in self._element_sets:
            es.add_derivative_product(x, dx, dv, alpha, beta, out, definite)

    # ------------------------------------------------------------------ realization
    def realize_subsystem_topology_impl(self, state: "State") -> None:
        self._free = self.get_free_particles()
        att = sorted(self._attached)
        self._att_index = np.array(att, dtype=np.int64)
        self._att_bodies = [self._attached[i][0] for i in att]
        self._att_stations = np.array([self._attached[i][1] for i in att]).reshape(-1, 3)
        self._element_sets = self._make_element_sets() + _fem.element_sets(
            len(self._x0), self._mass, self._remaining_data("tet"), self._remaining_data("triangle"))
        self._m_free = np.repeat(self._mass[self._free], 3)
        # scratch of the Dynamics and Acceleration stages, so realizing allocates no array per particle: the
        # free particles' masses by row (0 elsewhere) for their weight, and their forces gathered
        self._m_weight = np.where(np.isin(np.arange(len(self._x0)), self._free), self._mass, 0.0)
        self._f_scratch = np.zeros((len(self._x0), 3))
        self._f_free = np.zeros((len(self._free), 3))

    def realize_subsystem_model_impl(self, state: "State") -> None:
        n = len(self._x0)
        self.allocate_q(state, self._x0[self._free].reshape(-1))
        self.allocate_u(state, np.zeros(3 * len(self._free)))
        self._ce_g = self.allocate_cache_entry(state, Stage.Instance, np.zeros(3))
        self._ce_x = self.allocate_cache_entry(state, Stage.Position, np.zeros((n, 3)))
        self._ce_v = self.allocate_cache_entry(state, Stage.Velocity, np.zeros((n, 3)))
        self._ce_f = self.allocate_cache_entry(state, Stage.Dynamics, np.zeros((n, 3)))
        self._dv_loads = self.allocate_discrete_variable(state, Stage.Dynamics, np.zeros((n, 3)))

    def realize_subsystem_instance_impl(self, state: "State") -> None:
        g = np.zeros(3)
        for sub in self.get_system().get_force_subsystems():
            for i in range(sub.get_num_forces() if hasattr(sub, "get_num_forces") else 0):
                f = sub.get_force(i)
                if hasattr(f, "get_gravity") and not f.is_disabled(state):
                    g += f.get_gravity()
        self.upd_cache_entry(state, self._ce_g)[:] = g
        self.mark_cache_value_realized(state, self._ce_g)

    def realize_subsystem_position_impl(self, state: "State") -> None:
        x = self.upd_cache_entry(state, self._ce_x)
        x[:] = self._x0
        x[self._free] = self.get_q(state).reshape(-1, 3)
        for i, b, s in zip(self._att_index, self._att_bodies, self._att_stations):
            x[i] = b.find_station_location_in_ground(state, s)
        self.mark_cache_value_realized(state, self._ce_x)

    def realize_subsystem_velocity_impl(self, state: "State") -> None:
        v = self.upd_cache_entry(state, self._ce_v)
        v[:] = 0.0
        u = self.get_u(state)
        v[self._free] = u.reshape(-1, 3)
        for i, b, s in zip(self._att_index, self._att_bodies, self._att_stations):
            v[i] = b.find_station_velocity_in_ground(state, s)
        self.mark_cache_value_realized(state, self._ce_v)
        self.upd_qdot(state)[:] = u

    def realize_subsystem_dynamics_impl(self, state: "State") -> None:
        x = self.get_cache_entry(state, self._ce_x)
        v = self.get_cache_entry(state, self._ce_v)
        f = self.upd_cache_entry(state, self._ce_f)
        f[:] = self.get_discrete_variable(state, self._dv_loads)
        self._add_element_forces(np.ascontiguousarray(x), np.ascontiguousarray(v), f)
        g = self.get_cache_entry(state, self._ce_g)
        for a in range(3):  # a column at a time: a broadcast (n, 1) x (3,) product allocates numpy's buffers
            np.multiply(self._m_weight, g[a], out=self._f_scratch[:, a])
        f += self._f_scratch
        self.mark_cache_value_realized(state, self._ce_f)
        if not _core.all_finite(f):
            k = int(np.flatnonzero(~np.isfinite(f).all(1))[0])
            raise ArithmeticError(f"{self._where()}: the force on particle {k} is not finite (position {x[k].tolist()})")
        if len(self._att_index):
            system = self.get_system()
            body_forces = system.upd_rigid_body_forces(state)
            for i, b, s in zip(self._att_index, self._att_bodies, self._att_stations):
                b.apply_force_to_body_point(state, s, f[i], body_forces)

    def realize_subsystem_acceleration_impl(self, state: "State") -> None:
        f = self.get_cache_entry(state, self._ce_f)
        np.take(f, self._free, axis=0, out=self._f_free, mode="clip")  # (clip: an unbuffered take; all in range)
        np.divide(self._f_free.reshape(-1), self._m_free, out=self.upd_udot(state))

    # ------------------------------------------------------------------ results
    def get_positions(self, state: "State") -> np.ndarray:
        """Every particle's position (n, 3) in Ground (needs Position); read-only."""
        return self.get_cache_entry(state, self._ce_x)

    def get_velocities(self, state: "State") -> np.ndarray:
        """Every particle's velocity (n, 3) in Ground (needs Velocity); read-only."""
        return self.get_cache_entry(state, self._ce_v)

    def get_particle_forces(self, state: "State") -> np.ndarray:
        """The net applied force on each particle (n, 3) in Ground: elements, gravity on free
        particles, loads (needs Dynamics); read-only."""
        return self.get_cache_entry(state, self._ce_f)

    def set_positions(self, state: "State", positions: Any) -> None:
        """Set the free particles' positions from an (n, 3) array of every particle's (the others'
        rows are ignored: fixed and attached particles go where they must)."""
        x = _points(positions, f"{self._where()}.set_positions")
        if len(x) != len(self._x0):
            raise ValueError(f"{self._where()}.set_positions: expected {len(self._x0)} rows, got {len(x)}")
        self.upd_q(state)[:] = x[self._free].reshape(-1)

    def set_velocities(self, state: "State", velocities: Any) -> None:
        """Set the free particles' velocities from an (n, 3) array of every particle's."""
        v = _points(velocities, f"{self._where()}.set_velocities")
        if len(v) != len(self._x0):
            raise ValueError(f"{self._where()}.set_velocities: expected {len(self._x0)} rows, got {len(v)}")
        self.upd_u(state)[:] = v[self._free].reshape(-1)

    def set_loads(self, state: "State", loads: Any) -> None:
        """External forces (n, 3) in Ground on the particles, held until changed (a Dynamics-stage
        change)."""
        f = _points(loads, f"{self._where()}.set_loads")
        if len(f) != len(self._x0):
            raise ValueError(f"{self._where()}.set_loads: expected {len(self._x0)} rows, got {len(f)}")
        self.set_discrete_variable(state, self._dv_loads, f)

    def calc_kinetic_energy(self, state: "State") -> float:
        """1/2 sum m v^2 over the free particles (needs Velocity)."""
        v = self.get_cache_entry(state, self._ce_v)[self._free]
        return 0.5 * float(np.sum(self._mass[self._free] * np.einsum("ij,ij->i", v, v)))

    def calc_potential_energy(self, state: "State") -> float:
        """The elements' elastic energy plus the free particles' gravitational energy -m g . x
        (needs Position; evaluated per call)."""
        x = np.ascontiguousarray(self.get_cache_entry(state, self._ce_x))
        scratch = np.zeros_like(x)
        elastic = self._add_element_forces(x, scratch, np.zeros_like(x))
        g = self.get_cache_entry(state, self._ce_g)
        return elastic - float(np.sum(self._mass[self._free] * (x[self._free] @ g)))

    @output(Stage.Position, np.ndarray, name="positions")
    def _output_positions(self, state: "State") -> np.ndarray:
        """Every particle's position (n, 3) in Ground."""
        return self.get_positions(state)

    @output(Stage.Velocity, np.ndarray, name="velocities")
    def _output_velocities(self, state: "State") -> np.ndarray:
        """Every particle's velocity (n, 3) in Ground."""
        return self.get_velocities(state)
