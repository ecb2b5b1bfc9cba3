"""``Force.SmoothSphereHalfSpace``: OpenSim's SmoothSphereHalfSpaceForce (Simbody's smooth Hunt-Crossley).

A sphere of radius r centred at ``sphere_location`` on one body against the half-space x > 0 of
``half_space_frame`` on another (usually Ground). This is OpenSim's convention: the frame's +x axis
points *into* the material, so a ContactHalfSpace on Ground with orientation (0, 0, -pi/2) is the
floor y < 0. The law (Serrancoli et al. 2019; Falisse et al. 2019) is Hunt-Crossley for two equal
materials made twice differentiable, with indentation d = r + x . (c - o) (c the centre, o the
frame's origin), its rate vn and the tangential slip velocity v_t:

- k = 1/2 k_s^(2/3) (the pair's stiffness when both have k_s);
- fH = 4/3 k sqrt(r k) (sqrt(d^2 + cf))^(3/2), smoothed to fH (1/2 + 1/2 tanh(bd d));
- f = fH (1 + 3/2 c vn) (1/2 + 1/2 tanh(bv (vn + 2/(3c))));
- slip speed vs = sqrt(|v_t|^2 + cf), vr = vs/vt; friction magnitude
  f (min(vr, 1) (ud + 2 (us - ud)/(1 + vr^2)) + uv vs) opposing the slip;
- all applied at c + r x - d/2 x (the sphere's deepest point moved back by half the indentation);
- the reported potential energy is OpenSim's approximation 2/5 fH d (the smoothed force has no
  closed-form potential), so energy is not exactly conserved with this element.

cf (``constant_contact_force``), bd (``hertz_smoothing``) and bv (``hunt_crossley_smoothing``) have
OpenSim's defaults 1e-5, 300 and 50. It is a compiled force kind: all elements are evaluated by one
compiled call, so a model with it keeps the fused realization, the compiled time loop and the
batched calls.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ... import _core
from ...common.output import output
from ...common.property import Property, nonnegative, positive, vector3
from ...common.stage import Stage
from ...common.state import State
from ...spatial import Transform
from ..forces.builtin_forces import _body, _element, _vec3
from ..forces.force import Force, _Packed
from ..tree.mobilized_body import MobilizedBody
from . import _laws

__all__: list[str] = []


def _prop(name: str, check, doc: str) -> Property:
    return Property(stage=Stage.Instance, check=check, attr="_" + name, doc=doc)


@_element("SmoothSphereHalfSpace")
class _SmoothSphereHalfSpace(Force):
    """A smooth Hunt-Crossley contact between a sphere and a half-space (OpenSim's meanings).

    Parameters
    ----------
    forces : GeneralForceSubsystem
        The subsystem that holds the element.
    sphere_body : MobilizedBody
        The body carrying the sphere.
    sphere_location : array_like, shape (3,)
        The sphere's centre in that body.
    radius : float
        The sphere's radius (> 0).
    half_space_body : MobilizedBody
        The body carrying the half-space (usually Ground).
    half_space_frame : Transform
        The half-space's frame in its body; the material is on the frame's +x side.
    stiffness, dissipation, static_friction, dynamic_friction : float
        OpenSim's properties of the same names, with its defaults.
    viscous_friction, transition_velocity, constant_contact_force : float
        The same.
    hertz_smoothing, hunt_crossley_smoothing : float
        The same.
    """

    _conservative = True

    stiffness = _prop("stiffness", nonnegative, "k_s")
    dissipation = _prop("dissipation", nonnegative, "c (s/m)")
    static_friction = _prop("static_friction", nonnegative, "us")
    dynamic_friction = _prop("dynamic_friction", nonnegative, "ud")
    viscous_friction = _prop("viscous_friction", nonnegative, "uv (s/m)")
    transition_velocity = _prop("transition_velocity", positive, "vt (m/s)")
    constant_contact_force = _prop("constant_contact_force", positive, "cf, keeps the square roots smooth")
    hertz_smoothing = _prop("hertz_smoothing", positive, "bd (1/m)")
    hunt_crossley_smoothing = _prop("hunt_crossley_smoothing", positive, "bv (s/m)")
    radius = _prop("radius", positive, "sphere radius")
    sphere_location = Property(stage=Stage.Instance, check=vector3, attr="_p_BS", doc="sphere centre in its body")

    def __init__(self, forces, sphere_body: MobilizedBody, sphere_location, radius: float,
                 half_space_body: MobilizedBody, half_space_frame: Transform = Transform(), *,
                 stiffness: float = 1.0, dissipation: float = 0.0, static_friction: float = 0.0,
                 dynamic_friction: float = 0.0, viscous_friction: float = 0.0, transition_velocity: float = 0.01,
                 constant_contact_force: float = 1e-5, hertz_smoothing: float = 300.0,
                 hunt_crossley_smoothing: float = 50.0):
        what = "Force.SmoothSphereHalfSpace"
        self._sphere_body = _body(sphere_body, f"{what}: sphere_body", forces)
        self._half_space_body = _body(half_space_body, f"{what}: half_space_body", forces)
        if not isinstance(half_space_frame, Transform):
            raise TypeError(f"{what}: half_space_frame must be a Transform, got {type(half_space_frame).__name__}")
        self._X_HF = half_space_frame
        self._p_BS = _vec3(sphere_location, f"{what}: sphere_location")
        values = dict(stiffness=stiffness, dissipation=dissipation, static_friction=static_friction,
                      dynamic_friction=dynamic_friction, viscous_friction=viscous_friction,
                      transition_velocity=transition_velocity, constant_contact_force=constant_contact_force,
                      hertz_smoothing=hertz_smoothing, hunt_crossley_smoothing=hunt_crossley_smoothing,
                      radius=radius)
        for name, v in values.items():
            try:
                setattr(self, "_" + name, type(self).__dict__[name].check(v))
            except (TypeError, ValueError) as err:
                raise type(err)(f"{what}: {name}: {err}") from None
        super().__init__(forces)

    def get_sphere_body(self) -> MobilizedBody:
        """The body carrying the sphere."""
        return self._sphere_body

    def get_half_space_body(self) -> MobilizedBody:
        """The body carrying the half-space."""
        return self._half_space_body

    def get_half_space_frame(self) -> Transform:
        """The half-space's frame in its body (material on +x)."""
        return self._X_HF

    def _params(self) -> list:
        return [getattr(self, "_" + name) for name in _laws.SMOOTH_PARAMS]

    @classmethod
    def _pack(cls, elements, matter, state):
        """The compiled force kind "SmoothSphereHalfSpace": one kernel call for all elements, in the
        fused realization, the compiled time loop and the batched calls too."""
        a = cls._arrays(elements)
        n = len(elements)
        return _Packed(_core.make_force_set(
            "SmoothSphereHalfSpace", params=np.concatenate([a.R_HF.reshape(n, 9), a.params], axis=1),
            bodies=np.stack([a.sphere_body, a.half_space_body], axis=1), stations=np.stack([a.p_BS, a.p_HF], axis=1)),
            elements)

    @classmethod
    def _arrays(cls, elements) -> SimpleNamespace:
        n = len(elements)
        return SimpleNamespace(
            elements=list(elements),
            sphere_body=np.array([e._sphere_body._index for e in elements], dtype=np.int64),
            p_BS=np.array([e._p_BS for e in elements], dtype=np.float64).reshape(n, 3),
            half_space_body=np.array([e._half_space_body._index for e in elements], dtype=np.int64),
            R_HF=np.array([e._X_HF.R.matrix for e in elements], dtype=np.float64).reshape(n, 3, 3),
            p_HF=np.array([e._X_HF.p for e in elements], dtype=np.float64).reshape(n, 3),
            params=np.array([e._params() for e in elements], dtype=np.float64).reshape(n, len(_laws.SMOOTH_PARAMS)))

    # The energy (2/5 fH d) reads only positions, although the element function reads velocities
    # too: at Position stage the workspace's V_GB may be stale, which changes the forces computed
    # alongside (and dropped) but not the energy.

    def _run(self, state: State, stage) -> np.ndarray:
        """This element's report row (SMOOTH_REPORT_COLUMNS) in ``state`` (realized to ``stage``)."""
        matter = self._forces._matter()
        ws = matter._at(state, stage, f"{self!r}").ws
        a = type(self)._arrays([self])
        return _laws.smooth_sphere_half_space_law(a.sphere_body, a.p_BS, a.half_space_body, a.R_HF, a.p_HF,
                                                  a.params, ws, np.zeros((matter.get_num_bodies(), 2, 3)))[1][0]

    def _report(self, state: State) -> np.ndarray:
        return self._run(state, Stage.Velocity)

    @output(Stage.Position, float, name="indentation")
    def _output_indentation(self, state: State) -> float:
        """The sphere's indentation into the half-space (negative when apart)."""
        return float(self._run(state, Stage.Position)[0])

    @output(Stage.Velocity, float, name="normal_force")
    def _output_normal_force(self, state: State) -> float:
        """The normal force magnitude pushing the sphere out of the half-space."""
        return float(self._report(state)[4])

    @output(Stage.Velocity, np.ndarray, name="friction_force")
    def _output_friction_force(self, state: State) -> np.ndarray:
        """The friction force on the half-space's body (the sphere gets its opposite), in Ground."""
        return self._report(state)[5:8].copy()
