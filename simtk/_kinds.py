"""Classes whose built-in kinds are attributes registered when their modules load (``MobilizedBody.Pin``,
``Force.Gravity``, ``Constraint.Rod``, ``Body.Rigid``), as Simbody nests them."""
from __future__ import annotations

from typing import Any

__all__ = ["KindsMeta"]


class KindsMeta(type):
    """The metaclass of such a class: a misspelled kind is an error that lists the kinds there are.

    Normal lookup finds every registered kind first; this runs only when it failed. Type checkers read
    the signature below as "the class may have more attributes", so ``Force.Gravity(...)`` in a user's
    script type-checks although the kind is attached at import time.
    """

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        kinds = sorted(k for k, v in vars(cls).items() if isinstance(v, type) and k[:1].isupper())
        raise AttributeError(f"{cls.__name__} has no attribute {name!r}"
                             + (f"; its kinds are: {', '.join(kinds)}" if kinds else ""))
