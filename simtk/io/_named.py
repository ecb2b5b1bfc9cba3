"""The dicts of a loaded model's elements by their file names, whose missing name says what exists."""
from __future__ import annotations

import difflib
from typing import Any

__all__ = ["NamedDict"]


class NamedDict(dict):
    """A dict of ``kind`` elements by name (a model's ``joints``): a missing name raises a KeyError
    that lists the closest names, or all of them when there are few.

    Parameters
    ----------
    kind : str
        What the values are ("joint"), for the message.
    where : str or Path
        Where they were read from (the file), for the message.
    """

    def __init__(self, items: Any = (), kind: str = "element", where: Any = ""):
        super().__init__(items)
        self.kind, self.where = kind, str(where)

    def __missing__(self, key: Any):
        names = [str(k) for k in self]
        close = difflib.get_close_matches(str(key), names, n=5, cutoff=0.5)
        if not names:
            known = "there are none"
        elif len(names) <= 12:
            known = "the names are " + ", ".join(map(repr, names))
        else:
            known = f"{len(names)} names, e.g. " + ", ".join(map(repr, names[:8])) + ", ..."
        hint = f"did you mean {' or '.join(map(repr, close))}? " if close else ""
        source = f"{self.where}: " if self.where else ""
        raise KeyError(f"{source}no {self.kind} named {key!r}; {hint}({known})")

    def __reduce__(self):
        return (type(self), (dict(self), self.kind, self.where))
