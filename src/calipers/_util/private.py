"""Files only their owner may read: the store and reports hold every prompt and response,
and the code sandbox runs model-written programs as another user (``nobody``) on this
machine. Private folders: ``make_folder(..., private=True)`` in ``_util.home``."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = ["private_file", "write_private_text"]


def private_file(path: Path) -> Path:
    """Create ``path`` empty as ``0600`` when it does not exist (SQLite then gives its journal
    and WAL files the same mode); an existing file is left as is."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    return path


def write_private_text(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` (UTF-8), creating it ``0600``; an existing file is replaced
    in place and made ``0600`` too."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        os.fchmod(fd, 0o600)
        f.write(text)
    return path
