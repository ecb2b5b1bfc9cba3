"""The constraints layer: constraint elements, prescribed motions and locks, their equations (``_rows``),
the solver (``_solver``), projection (``_projection``) and the matter operators that involve them
(``ConstraintOperators``). Depends on the tree layer; the tree does not depend on it."""
from . import builtin_constraints as _builtin_constraints  # noqa: F401  (registers Constraint.<Name>)
from . import function_constraints as _function_constraints  # noqa: F401  (the Function-defined ones)
from . import jit_constraint as _jit_constraint  # noqa: F401  (registers Constraint.Jit)
from ._operators import ConstraintOperators
from .constraint import Constraint
from .motion import Motion

__all__ = ["Constraint", "ConstraintOperators", "Motion"]
