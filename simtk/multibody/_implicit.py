"""What the semi-implicit Euler step linearizes in a multibody System (``SemiImplicitEulerIntegrator``)."""
from __future__ import annotations

from .. import _core, _core_implicit
from ..common.state import State
from .forces import GeneralForceSubsystem
from .matter import SimbodyMatterSubsystem


def implicit_linearizer(system, state: State) -> tuple:
    """``(Linearizer, None)`` over the matter's tree and the built-in force sets of ``state``'s instance,
    or ``(None, why not)``. Python parts (a Force.Custom, DiscreteForces) are left out: their forces
    stay explicit in the step."""
    matter = system.get_matter_subsystem()
    if type(matter) is not SimbodyMatterSubsystem:
        return None, f"the matter subsystem is a {type(matter).__name__}, whose kinematics are computed in Python"
    layout = matter._layout(state)
    if layout.custom:
        return None, "a Custom mobilizer's kinematics are computed in Python"
    ws = matter._cache(state).ws
    if (state.get_nq(), state.get_nu()) != (ws.nq, ws.nu):
        return None, (f"{state.get_nq() - ws.nq} q and {state.get_nu() - ws.nu} u belong to subsystems other than "
                      "the matter (deformable bodies: use simtk.deformable.ImplicitEulerIntegrator)")
    n_quaternions = len(layout.quaternion_bodies)
    if state.get_nq_err() != n_quaternions or state.get_nu_err() or state.get_nudot_err():
        return None, (f"the System has constraint equations ({state.get_nq_err() - n_quaternions} position, "
                      f"{state.get_nu_err()} velocity, {state.get_nudot_err()} acceleration), which this step does "
                      "not solve")
    sets = []
    for sub in system._force_subsystems:
        if isinstance(sub, GeneralForceSubsystem):
            groups = sub._groups(state)
            sets.extend(p.fs for p in groups.position_packed + groups.velocity_packed)
    return _core_implicit.make_linearizer(_core.make_tree_batch(ws, tuple(sets))), None
