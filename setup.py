"""Build the compiled core ``simtk_core`` from ``simtk_core.pyx``.

Set ``SIMTK_DEBUG=1`` in the environment to build with bounds and wraparound
checks on (slower; for debugging kernels).
"""
import os
import shlex
import subprocess
import sysconfig
import tempfile

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

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

setup(
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
