"""Fused realization of multibody States: Time to Acceleration in one compiled call.

The matter subsystem's stage hooks, when its mobilizers are built in and it has no constraint
equations (constraints, locks, prescribed motions) and no stage hooks, and the built-in force kinds
of a ``GeneralForceSubsystem`` only run kernels and copy arrays, so ``MultibodySystem.realize`` runs
them as one ``simtk_core.FusedRealizer`` call on the same arrays (``core/realize.pxi``): the caches,
stage marks and realization counts are those the hooks leave, bitwise, for a fraction of the
Python work. What is Python stays Python and is called where the hooks' path calls it: the force
subsystem's Python elements (``Force.Custom``, ``Force.DiscreteForces``) and their stage hooks, and
the hooks of every other subsystem (a user's force subsystem, the simulation's agents). A Custom
mobilizer, a constraint or a matter stage hook keeps the hooks, and so does any kernel failure: the
stage is then realized again by the hooks, which raise their diagnosis.

The plan is made once per instance (``State._fused``: dropped when Instance is invalidated, not
copied with the State, not pickled).
"""
from __future__ import annotations

from .. import _core
from ..common.stage import ACCELERATION, DYNAMICS, INSTANCE, POSITION, STAGE_NAMES, TIME, VELOCITY
from ..common.state import State
from .constraints._compiled import loop_constraints_spec
from .forces.force_subsystem import GeneralForceSubsystem
from .matter import SimbodyMatterSubsystem

__all__ = ["make_fused", "python_parts", "describe_python_parts"]

assert dict(_core._k.FUSED_STAGES) == dict(Instance=INSTANCE, Time=TIME, Position=POSITION, Velocity=VELOCITY,
                                             Dynamics=DYNAMICS, Acceleration=ACCELERATION)
_PLAN = _core._k.FUSED_PLAN_KINDS


def _compiled_forces(system):
    """The force subsystem whose built-in elements the realizer evaluates: the first one that is
    exactly a GeneralForceSubsystem (a subclass may override its hooks), or None."""
    for sub in system.get_force_subsystems():
        if type(sub) is GeneralForceSubsystem:
            return sub
    return None


def _plan(system, matter, fsub, kernels: bool) -> tuple:
    """Per stage Time..Acceleration, ((subsystem index, plan kind, hook), ...) in realization order;
    ``kernels``: the matter's hooks are its kernels (else its hooks are called)."""
    plan = []
    for g in range(TIME, ACCELERATION + 1):
        entries = []
        for idx, hook in system._plan[g]:
            if idx == matter._index and kernels:
                entries.append((idx, _PLAN["matter"], None))
            elif fsub is not None and idx == fsub._index:
                entries.append((idx, _PLAN["forces"], None))
            elif hook is None:
                entries.append((idx, _PLAN["none"], None))
            else:
                entries.append((idx, _PLAN["hook"], hook))
        plan.append(tuple(entries))
    return tuple(plan)


def make_fused(system, state: State):
    """The fused realization of ``state``'s instance (realized to Instance): a
    ``simtk_core.FusedRealizer``, whose ``realize_to(system, state, stage)`` is
    ``MultibodySystem.realize``'s path, or False when the matter is not a SimbodyMatterSubsystem."""
    matter = system.get_matter_subsystem()
    if type(matter) is not SimbodyMatterSubsystem:
        return False
    ssm = state._subs[matter._index]
    cache = ssm.cache[matter._cache_index].value
    # a Custom mobilizer, a constraint equation or a matter stage hook: the matter's own hooks run
    # (in Python, around their kernels), the rest as everywhere
    kernels = not (cache.layout.custom or cache.plan.m or any(cache.stage_hooks.values()))
    fsub = _compiled_forces(system)
    sets: tuple = ((), ())
    pos_bf = pos_mf = None
    entry = None
    has_position = customs = False
    py_position = py_velocity = None
    if fsub is not None:
        ssf = state._subs[fsub._index]
        groups = ssf.cache[fsub._groups_index].value
        sets = (groups.position_sets, groups.velocity_sets)
        has_position = groups.has_position
        # the elements' own stage hooks (Force.Custom's realize_time ... realize_acceleration), where any
        # element has one: the subsystem's loop over them costs per stage even when none does
        customs = groups.has_customs and any(stage in f._hooks for f in groups.custom_position + groups.custom_velocity
                                             for stage in _FS_HOOKS)
        if has_position:
            entry = ssf.cache[fsub._position_index]
            pos_bf, pos_mf = entry.value.body_forces, entry.value.mobility_forces
        if groups.position_python or groups.custom_position:
            py_position = (tuple(groups.position_python), tuple(groups.custom_position))
        if groups.velocity_python or groups.custom_velocity:
            py_velocity = (tuple(groups.velocity_python), tuple(groups.custom_velocity))
    plan = _plan(system, matter, fsub, kernels)
    staged = not kernels or customs or py_position is not None or py_velocity is not None or any(
        kind == _PLAN["hook"] for stage in plan for _, kind, _ in stage)
    qb = cache.layout.quaternion_bodies
    start = cache.plan.quaternion_err_start
    qerr = ssm.qerr[start:start + len(qb)]
    core = _core._k.FusedRealizer(cache.ws, ssm.q, ssm.u, ssm.qdot, ssm.udot, ssm.qdotdot, qerr, qb,
                                  cache.body_forces, cache.mobility_forces, cache.A_GB, pos_bf, pos_mf,
                                  sets[0], sets[1], has_position, plan if staged else None, fsub, customs,
                                  py_position, py_velocity)
    core.entry = entry
    core.matter = matter
    return core


def python_parts(system, state: State) -> list[tuple[object, str]]:
    """What runs in Python when ``state`` (realized to Instance) is realized to Acceleration: per
    part, its key in ``FusedRealizer.python_seconds`` and a description for a user (the Python force
    elements of the compiled force subsystem, the stage hooks of other subsystems). Empty when the
    realization is all kernels."""
    matter = system.get_matter_subsystem()
    fsub = _compiled_forces(system)
    parts: list[tuple[object, str]] = []
    fused = state._fused
    for sub in system._subsystems:
        if sub is matter:
            if fused and any(idx == matter._index and kind == _PLAN["hook"] for stage in fused.plan_entries()
                             for idx, kind, _ in stage):
                parts.append((matter._index, f"the matter subsystem's stage hooks ({_matter_why(matter, state)})"))
            continue
        if sub is fsub:
            groups = state._subs[fsub._index].cache[fsub._groups_index].value
            for key, bulk, customs in (("position", groups.position_python, groups.custom_position),
                                       ("velocity", groups.velocity_python, groups.custom_velocity)):
                names = [f"the {cls.__name__.lstrip('_')} elements" for cls, _ in bulk]
                names += [f"Force.Custom {f.get_absolute_path()!r} ({type(f.get_implementation()).__name__}"
                          ".calc_force)" for f in customs]
                if names:
                    parts.append((key, f"{', '.join(names)} of {sub.get_name()!r}"))
            if groups.has_customs:
                hooked = [f.get_absolute_path() for f in groups.custom_position + groups.custom_velocity
                          if any(stage in f._hooks for stage in _FS_HOOKS)]
                if hooked:
                    parts.append(("hooks", f"the stage hooks of {', '.join(map(repr, hooked))}"))
            continue
        stages = [STAGE_NAMES[g] for g in range(TIME, ACCELERATION + 1)
                  if any(idx == sub._index and hook is not None for idx, hook in system._plan[g])]
        if stages:
            parts.append((sub._index, f"subsystem {sub.get_name()!r} ({type(sub).__name__}: its "
                                      f"{', '.join(stages)} hooks)"))
    return parts


_FS_HOOKS = ("time", "position", "velocity", "dynamics", "acceleration")


def _matter_why(matter, state: State) -> str:
    """What makes the matter's realization Python: Custom mobilizers, constraint equations, hooks."""
    cache = state._subs[matter._index].cache[matter._cache_index].value
    why = []
    if cache.layout.custom:
        why.append("Custom mobilizers " + ", ".join(repr(b.get_name()) for b in cache.layout.custom[:3]))
    if cache.plan.m:
        _, kinds = loop_constraints_spec(matter, cache.plan)
        why.append(f"{cache.plan.m} constraint equations solved in Python" + (f": {kinds}" if kinds else ""))
    if any(cache.stage_hooks.values()):
        why.append("stage hooks of its elements")
    return "; ".join(why)


def describe_python_parts(system, state: State) -> list[str]:
    """``python_parts`` in words, each with its cost per evaluation of the derivatives as measured
    while ``state`` was realized (its mean over the realizations so far)."""
    parts = python_parts(system, state)
    fused = state._fused
    seconds, evaluations = fused.python_seconds() if fused else ({}, 0)
    out = []
    for key, label in parts:
        if evaluations and key in seconds:
            out.append(f"{label}: {seconds[key] / evaluations * 1e6:.3g} us per evaluation")
        else:
            out.append(f"{label}: not measured yet")
    return out
