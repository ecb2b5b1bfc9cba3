"""Build the compiled core ``simtk_core`` from ``simtk_core.pyx``.

Set ``SIMTK_DEBUG=1`` in the environment to build with bounds and wraparound
checks on (slower; for debugging kernels).

A build is reused: pip builds in a new temporary directory every time (``pip install -e .``
recompiled the core, about 1.5 minutes, at every install), so each compiled core is kept in
``build/simtk_core_cache/<key>/``, where the key hashes what the binary depends on (the generated
C source, which Cython regenerates when the ``.pyx`` or any ``core/*.pxi`` changes, the compiler
flags, Python's ABI and numpy's version). An install whose key is there copies that core instead
of compiling; ``SIMTK_REBUILD=1`` compiles anyway.
"""
import hashlib
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
CACHE = os.path.join(ROOT, "build", "simtk_core_cache")
KEEP = 4  # cached cores kept (the newest): enough to switch branches back and forth without a rebuild

DEBUG = os.environ.get("SIMTK_DEBUG", "0") not in ("", "0")


def openmp_flags() -> list:
    """``["-fopenmp"]`` when the C compiler builds and links a small OpenMP program, else ``[]``.

    The batched kernels then run their items on several threads; without OpenMP they run
    serially and the build still succeeds. ``SIMTK_NO_OPENMP=1`` skips the probe.
    """
    if os.environ.get("SIMTK_NO_OPENMP", "0") not in ("", "0"):
        return []
    cc = shlex.split(sysconfig.get_config_var("CC") or "cc")
    src = "#include <omp.h>\nint main(void) { return omp_get_max_threads() > 0 ? 0 : 1; }\n"
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "probe.c")
        with open(path, "w") as f:
            f.write(src)
        try:
            done = subprocess.run(cc + ["-fopenmp", path, "-o", os.path.join(d, "probe")],
                                  capture_output=True, timeout=120)
        except (OSError, subprocess.SubprocessError):
            return []
    return ["-fopenmp"] if done.returncode == 0 else []


OPENMP = openmp_flags()

extension = Extension(
    "simtk_core",
    sources=["simtk_core.pyx"],
    include_dirs=[np.get_include()],
    define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    # -ffp-contract=off: no fused multiply-adds, so the compiled time loop rounds every product and
    # sum as numpy does and its trajectories equal the Python path's bitwise on every CPU.
    extra_compile_args=(["-O0", "-g"] if DEBUG else ["-O3"]) + ["-ffp-contract=off"] + OPENMP,
    extra_link_args=OPENMP,
)



_SITE = re.compile(rb"[^\s\"'<>()]*[/\\]site-packages[/\\]")


def _cache_key(ext: Extension) -> str:
    """A hash of everything the compiled core depends on."""
    import Cython

    h = hashlib.sha256()
    for src in ext.sources:  # the C sources after cythonize
        with open(os.path.join(ROOT, src) if not os.path.isabs(src) else src, "rb") as f:
            # Cython writes the paths of numpy's headers into the C source, and pip's isolated build
            # environment is a new temporary directory every time: the paths are left out of the key
            # (numpy's and Cython's versions are in it).
            h.update(_SITE.sub(b"<site-packages>/", f.read()))
    for part in (ext.extra_compile_args, ext.extra_link_args, ext.define_macros, ext.libraries,
                 sysconfig.get_config_var("EXT_SUFFIX"), sysconfig.get_config_var("CC"), sys.version,
                 platform.machine(), np.__version__, Cython.__version__, DEBUG):
        h.update(repr(part).encode())
    return h.hexdigest()[:24]


class CachedBuildExt(build_ext):
    """``build_ext`` that copies a kept core whose key matches instead of compiling it again."""

    def build_extension(self, ext):
        target = self.get_ext_fullpath(ext.name)
        try:
            key = _cache_key(ext)
        except OSError:  # a source not generated yet: nothing to compare, build as usual
            return super().build_extension(ext)
        kept = os.path.join(CACHE, key, os.path.basename(target))
        if os.path.exists(kept) and os.environ.get("SIMTK_REBUILD", "0") in ("", "0"):
            os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
            shutil.copy2(kept, target)
            os.utime(os.path.join(CACHE, key))  # recently used: kept longest
            print(f"simtk_core: reusing the core built from the same sources ({kept})")
            return None
        super().build_extension(ext)
        try:
            os.makedirs(os.path.dirname(kept), exist_ok=True)
            shutil.copy2(target, kept + ".part")
            os.replace(kept + ".part", kept)  # never a half-written core under a valid key
            _prune()
        except OSError as e:  # a read-only tree: the build stands, it is just not kept
            print(f"simtk_core: could not keep the build in {CACHE}: {e}")
        return None


def _prune() -> None:
    entries = sorted((os.path.join(CACHE, d) for d in os.listdir(CACHE)), key=os.path.getmtime, reverse=True)
    for old in entries[KEEP:]:
        shutil.rmtree(old, ignore_errors=True)


setup(
    cmdclass={"build_ext": CachedBuildExt},
    ext_modules=cythonize(
        [extension],
        compiler_directives={
            "language_level": 3,
            "boundscheck": DEBUG,
            "wraparound": DEBUG,
            "initializedcheck": DEBUG,
            "cdivision": not DEBUG,
        },
    ),
)
