"""Where calipers keeps its files (``$CALIPERS_HOME``, else ``./.calipers``) and how a folder
it writes to is made: a path that cannot be a folder is a :class:`ConfigError` in one sentence
that names the path, the part in the way and what to do, never a bare ``OSError``."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from calipers.errors import ConfigError

__all__ = ["HOME_ENV", "calipers_home", "folder_problem", "make_folder"]

HOME_ENV = "CALIPERS_HOME"


def calipers_home() -> Path:
    """``$CALIPERS_HOME`` (``~`` expanded), else ``./.calipers``; absolute, not created."""
    home = os.environ.get(HOME_ENV)
    return (Path(home).expanduser() if home else Path.cwd() / ".calipers").absolute()


def _home_hint(path: Path) -> str | None:
    home = os.environ.get(HOME_ENV)
    if home and path.absolute().is_relative_to(Path(home).expanduser().absolute()):
        return (
            f"{HOME_ENV}={home}: point it at a folder calipers may create and write, "
            "or unset it to use ./.calipers."
        )
    return None


def folder_problem(path: Path) -> str | None:
    """Why ``path`` cannot be (made) a writable folder, as the end of a sentence; None when
    it can (as far as can be told before trying)."""
    path = path.absolute()
    for part in (path, *path.parents):
        if part.exists() or part.is_symlink():
            if not part.is_dir():
                return (
                    f"{part} is a file, not a folder"
                    if part.exists()
                    else f"{part} is a broken link"
                )
            if not os.access(part, os.W_OK | os.X_OK):
                verb = "write in" if part == path else "create folders in"
                return f"there is no permission to {verb} {part}"
            return None
    return None


def make_folder(path: Path, what: str, *, hint: str | None = None, private: bool = False) -> Path:
    """``mkdir -p path``; ``what`` says what the folder is for ("the store's folder").
    ``private`` creates missing folders ``0700`` (the store and reports: sandboxed programs run
    as another user); an existing folder keeps its mode. Raises :class:`ConfigError` naming
    the path and what is in the way."""
    problem = folder_problem(path)
    if problem is None:
        try:
            if private:  # every folder it creates, not only the last (mkdir's mode= is)
                for folder in [*reversed(path.parents), path]:
                    if not folder.exists():
                        folder.mkdir(mode=0o700, exist_ok=True)
            else:
                path.mkdir(parents=True, exist_ok=True)
            return path
        except OSError as e:
            problem = _reason(e)
    raise ConfigError(
        f"Cannot use {path} as {what}: {problem}.",
        hint=hint or _home_hint(path) or "Choose another path.",
    )


def _reason(e: OSError) -> str:
    if e.errno in (errno.EACCES, errno.EPERM):
        return f"there is no permission to write {e.filename or 'there'}"
    if e.errno == errno.EROFS:
        return "the file system is read-only"
    if e.errno == errno.ENOSPC:
        return "the disk is full"
    return (e.strerror or type(e).__name__).rstrip(".").lower()
