"""Files: simtk's own model format, State snapshots, and URDF, OpenSim and MJCF model import.

The readers and writers are imported when first used, so ``import simtk`` stays light.
"""
from __future__ import annotations

import importlib

_WHERE = {
    "save_model": "model_file", "load_model": "model_file", "register_class": "model_file",
    "register_kernel": "_model_registry_jit",
    "save_state": "snapshot", "load_state": "snapshot", "load_continuation": "snapshot",
    "model_to_text": "model_file", "model_from_text": "model_file", "ModelFileWarning": "model_file",
    "SnapshotError": "snapshot",
    "load_urdf": "urdf", "describe_urdf": "urdf", "UrdfModel": "urdf", "UrdfWarning": "urdf", "Geometry": "urdf",
    "load_osim": "osim", "describe_osim": "osim", "OsimModel": "osim", "OsimFileError": "osim",
    "load_mjcf": "mjcf", "describe_mjcf": "mjcf", "MjcfModel": "mjcf", "MjcfWarning": "mjcf", "MjcfGeom": "mjcf",
    "ModelFileError": "errors", "ModelDescription": "_description", "LoadedModel": "_loaded_model",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'simtk.io' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)
