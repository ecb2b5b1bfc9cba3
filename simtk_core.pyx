# cython: language_level=3
"""The compiled core of simtk: pure ``nogil`` kernels over raw float64 arrays.

Only ``simtk/_core.py`` imports this module. It validates shapes, dtypes and
contiguity before calling in, so the kernels here check nothing. Each topic
lives in its own include file under ``core/``.
"""

include "core/validation.pxi"
include "core/spatial.pxi"
include "core/joints.pxi"
include "core/tree.pxi"
include "core/workspace.pxi"
include "core/functions.pxi"
include "core/function_joint.pxi"
include "core/dense.pxi"
include "core/constraint_rows.pxi"
include "core/forces.pxi"
include "core/paths.pxi"
include "core/path_wrap.pxi"
include "core/path_wrap_ellipsoid.pxi"
include "core/path_wrap_path.pxi"
include "core/jit_forces.pxi"
include "core/muscles.pxi"
include "core/millard.pxi"
include "core/batch.pxi"
include "core/point.pxi"
include "core/contact.pxi"
include "core/contact_laws.pxi"
include "core/contact_force.pxi"
include "core/loop_couplers.pxi"
include "core/jit_constraints.pxi"
include "core/loop_constraints.pxi"
include "core/stepper.pxi"
include "core/realize.pxi"
include "core/state_ops.pxi"
include "core/helpers.pxi"
