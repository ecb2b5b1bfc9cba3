"""The error every model-file reader and writer of `simtk.io` raises, with the file and line."""
from __future__ import annotations

import os

__all__ = ["ModelFileError"]


class ModelFileError(ValueError):
    """A model file that cannot be read (malformed, or a model that is not valid), or a model that
    cannot be written. The message starts with ``file:line:`` when they are known.

    Attributes
    ----------
    file : str or None
        The file read or written.
    line : int or None
        The line of the offending element (1-based).
    element : str or None
        A short description of the element, e.g. ``<joint name="elbow">``.
    reason : str
        What was wrong or expected, without the location.
    """

    def __init__(self, message: str, file: str | os.PathLike | None = None, line: int | None = None,
                 element: str | None = None):
        self.file = None if file is None else os.fspath(file)
        self.line = line
        self.element = element
        self.reason = message
        where = self.file or "<text>"
        if line is not None:
            where += f":{line}"
        prefix = f"{where}: " if (self.file is not None or line is not None) else ""
        super().__init__(f"{prefix}{element + ': ' if element else ''}{message}")
