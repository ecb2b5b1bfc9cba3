"""Fused realization of plain multibody States: Time to Acceleration in one compiled call.

A State is *plain* when its System's matter subsystem has only built-in mobilizers, no constraint
equations (constraints, locks, prescribed motions) and no stage hooks, and the System has at most
one force subsystem, a ``GeneralForceSubsystem`` whose enabled elements are all built-in kinds;
other subsystems may hold variables but have no hook from Time to Acceleration. The
stage hooks of such a State only run kernels and copy arrays, so ``MultibodySystem.realize`` runs
them as one ``simtk_core.FusedRealizer`` call on the same arrays (``core/realize.pxi``): the caches,
stage marks and realization counts are those the hooks leave, bitwise, for a fraction of the
Python work. Anything else (a ``Force.Custom``, a Custom mobilizer, a constraint, a user
subsystem) keeps the hooks, and so does any failure: the stages are then realized again by the
hooks, which raise their diagnosis.

The plan is made once per instance (``State._fused``: dropped when Instance is invalidated, not
copied with the State, not pickled).
"""
from __future__ import annotations

from .. import _core
from ..common.stage import ACCELERATION, DYNAMICS, INSTANCE, POSITION, VELOCITY
from ..common.state import State
from .forces.force_subsystem import GeneralForceSubsystem
from .matter import SimbodyMatterSubsystem

__all__ = ["make_fused"]

assert dict(_core._k.FUSED_STAGES) == dict(Instance=INSTANCE, Position=POSITION, Velocity=VELOCITY,
                                             Dynamics=DYNAMICS, Acceleration=ACCELERATION)


def make_fused(system, state: State):
    """The fused realization of ``state``'s instance (realized to Instance): a
    ``simtk_core.FusedRealizer``, whose ``realize_to(system, state, stage)`` is
    ``MultibodySystem.realize``'s path, or False when the State is not plain."""
    matter = system.get_matter_subsystem()
    forces = system.get_force_subsystems()
    if type(matter) is not SimbodyMatterSubsystem or len(forces) > 1 or not all(
            sub is matter or sub in forces or system._passive(sub) for sub in system._subsystems):
        return False
    ssm = state._subs[matter._index]
    cache = ssm.cache[matter._cache_index].value
    if cache.layout.custom or cache.plan.m or any(cache.stage_hooks.values()):
        return False
    sets: tuple = ((), ())
    pos_bf = pos_mf = None
    entry = None
    has_position = False
    if forces:
        fsub = forces[0]
        if type(fsub) is not GeneralForceSubsystem:
            return False
        ssf = state._subs[fsub._index]
        groups = ssf.cache[fsub._groups_index].value
        if groups.has_customs or groups.position_python or groups.velocity_python:
            return False
        sets = (groups.position_sets, groups.velocity_sets)
        has_position = groups.has_position
        if has_position:
            entry = ssf.cache[fsub._position_index]
            pos_bf, pos_mf = entry.value.body_forces, entry.value.mobility_forces
    qb = cache.layout.quaternion_bodies
    start = cache.plan.quaternion_err_start
    qerr = ssm.qerr[start:start + len(qb)]
    core = _core._k.FusedRealizer(cache.ws, ssm.q, ssm.u, ssm.qdot, ssm.udot, ssm.qdotdot, qerr, qb,
                                  cache.body_forces, cache.mobility_forces, cache.A_GB, pos_bf, pos_mf,
                                  sets[0], sets[1], has_position)
    core.entry = entry
    core.matter = matter
    return core
