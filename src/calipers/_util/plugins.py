"""Loading registrations once: built-ins first, then plugins' entry points."""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points

__all__ = ["Registrations"]


class Registrations:
    """Runs ``builtins()`` and every ``register()`` callable in entry-point ``group`` the
    first time ``ensure()`` is called. Built-ins go through the same path plugins use."""

    def __init__(self, group: str, builtins: Callable[[], None]) -> None:
        self._group = group
        self._builtins = builtins
        self._done = False

    def ensure(self) -> None:
        if self._done:
            return
        self._done = True
        self._builtins()
        for ep in entry_points(group=self._group):
            ep.load()()
