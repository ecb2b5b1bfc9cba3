"""Build the compiled core ``simtk_core`` from ``simtk_core.pyx``.

Set ``SIMTK_DEBUG=1`` in the environment to build with bounds and wraparound
checks on (slower; for debugging kernels).
"""
import os

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("SIMTK_DEBUG", "0") not in ("", "0")

extension = Extension(
    "simtk_core",
    sources=["simtk_core.pyx"],
    include_dirs=[np.get_include()],
    define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    extra_compile_args=["-O0", "-g"] if DEBUG else ["-O3"],
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
