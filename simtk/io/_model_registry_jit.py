"""Force.Jit, MobilizedBody.Jit and Constraint.Jit in the model format: the kernel saved by a registered name
(the code stays in the user's module).

A file holds ``Force.Jit [ name="..." kernel="my_spring" params=[ ... ] ]`` (or a ``MobilizedBody.Jit`` with
its frames, mass properties, kernel and params; a ``Constraint.Jit`` with its kernel and params); loading it
finds the kernel
registered under ``my_spring`` by :func:`register_kernel` (the user's module, imported before
``load_model``, registers it, as ``register_class`` does for Python classes).
"""
from __future__ import annotations

from simtk import Constraint, Force, MobilizedBody
from simtk.multibody.constraints.jit_constraint import ConstraintKernel
from simtk.multibody.forces.jit_force import ForceKernel
from simtk.multibody.tree.jit_mobilizer import MobilizerKernel
from simtk.spatial import Body, MassProperties, Transform

from ._model_registry import _WORD, _builtin
from .errors import ModelFileError

__all__ = ["register_kernel"]

_KERNELS: dict[str, ForceKernel | MobilizerKernel | ConstraintKernel] = {}
_NAMES: dict[int, str] = {}  # id(kernel) -> name (the kernel is held by _KERNELS, so its id stays its own)


def register_kernel(kernel: ForceKernel | MobilizerKernel | ConstraintKernel, name: str | None = None) -> str:
    """Register a ``Force.Jit``, ``MobilizedBody.Jit`` or ``Constraint.Jit`` kernel so that models using it
    save and load by ``name``.

    Parameters
    ----------
    kernel : ForceKernel, MobilizerKernel or ConstraintKernel
        Made by ``@simtk.jit.force``, ``@simtk.jit.mobilizer``, ``simtk.jit.constraint`` or their
        ``from_capsule``.
    name : str, optional
        The name written in files (default: the kernel's name, its function's ``__qualname__``).
        A word of letters, digits, ``_`` and ``.``, not starting with a digit.

    Returns
    -------
    str
        The registered name.

    Raises
    ------
    TypeError
        ``kernel`` is not a ForceKernel, MobilizerKernel or ConstraintKernel.
    ValueError
        ``name`` is not a valid word, or is taken by another kernel (a kernel registered again under
        its own name is accepted).
    """
    if not isinstance(kernel, (ForceKernel, MobilizerKernel, ConstraintKernel)):
        raise TypeError(f"register_kernel: expected a kernel made by @simtk.jit.force, @simtk.jit.mobilizer, "
                        f"simtk.jit.constraint or their from_capsule, got {type(kernel).__name__}")
    name = kernel.name if name is None else name
    if not isinstance(name, str) or not _WORD.fullmatch(name) or name in ("true", "false"):
        raise ValueError(f"register_kernel: {name!r} is not a valid kernel name for a model file (letters, digits, "
                         "'_' and '.'; give name=)")
    old = _KERNELS.get(name)
    if old is not None and old is not kernel:
        raise ValueError(f"register_kernel: the name {name!r} is taken by {old!r}")
    previous = _NAMES.get(id(kernel))
    if previous is not None and previous != name:
        raise ValueError(f"register_kernel: {kernel!r} is registered as {previous!r} already")
    _KERNELS[name] = kernel
    _NAMES[id(kernel)] = name
    return name


def _kernel_name(e) -> str:
    kernel = e.get_kernel()
    name = _NAMES.get(id(kernel))
    if name is None or _KERNELS.get(name) is not kernel:
        raise ModelFileError(f"{e.get_absolute_path()} ({type(e).__qualname__}): cannot be written: its kernel {kernel.name!r} is "
                             "not registered with simtk.io.register_kernel")
    return name


def _kernel(ctx, v, cls: type):
    kname, line = ctx.get(v, "kernel")
    if not isinstance(kname, str):
        raise ctx.error(f"kernel: expected the quoted name of a registered kernel, got {kname!r}", line)
    kernel = _KERNELS.get(kname)
    if kernel is None:
        raise ctx.error(f"kernel: no kernel is registered as {kname!r} (import the module that registers it with "
                        "simtk.io.register_kernel before loading)", line)
    if not isinstance(kernel, cls):
        raise ctx.error(f"kernel: {kname!r} is a {type(kernel).__name__}, not a {cls.__name__}", line)
    return kernel


def _build(ctx, owner, refs, v, name):
    kernel = _kernel(ctx, v, ForceKernel)
    params = ctx.vector(v, "params") if "params" in v else ()
    position_only = ctx.flag(v, "depends_only_on_positions") if "depends_only_on_positions" in v else None
    return Force.Jit(owner, ctx.matter, kernel, params, depends_only_on_positions=position_only, name=name)


_builtin("Force.Jit", Force.Jit, "force", _build,
         extras=[("kernel", _kernel_name), ("params", lambda e: e.get_params()),
                 ("depends_only_on_positions", lambda e: e._position_only_flag)])


def _build_mobilizer(ctx, owner, refs, v, name):
    kernel = _kernel(ctx, v, MobilizerKernel)
    body = Body.Massless() if ctx.flag(v, "massless") else Body.Rigid(ctx.typed(v, "mass_properties", MassProperties))
    return MobilizedBody.Jit(refs["parent"], ctx.typed(v, "inboard_frame", Transform), body,
                             ctx.typed(v, "outboard_frame", Transform), kernel,
                             ctx.vector(v, "params") if "params" in v else (), name=name)


_builtin("MobilizedBody.Jit", MobilizedBody.Jit, "mobilizer", _build_mobilizer,
         refs=[("parent", lambda m: m.get_parent_mobilized_body())],
         extras=[("kernel", _kernel_name), ("params", lambda m: m.get_params()),
                 ("massless", lambda m: True if isinstance(m.get_body(), Body.Massless) else None)])


def _build_constraint(ctx, owner, refs, v, name):
    kernel = _kernel(ctx, v, ConstraintKernel)
    params = ctx.vector(v, "params") if "params" in v else ()
    return Constraint.Jit(ctx.matter, kernel, params, name=name)


_builtin("Constraint.Jit", Constraint.Jit, "constraint", _build_constraint,
         extras=[("kernel", _kernel_name), ("params", lambda e: e.get_params())])
