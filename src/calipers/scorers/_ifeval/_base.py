"""The checker registry and the typed view of an instruction's arguments.

A checker is ``(response, args) -> bool``: does ``response`` follow the instruction? It is
registered under the instruction id IFEval uses (``"punctuation:no_comma"``). ``args`` wraps
the instruction's ``kwargs`` from the data file and the language detector; a missing or
ill-typed argument is a :class:`~calipers.errors.DataError` (the sample is recorded as an
error, never as a failed instruction).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from calipers.errors import DataError

__all__ = ["CHECKERS", "Args", "Checker", "Detector", "checker", "compare"]

Detector = Callable[[str], "str | None"]
"""Text -> ISO 639-1 language code, or None when the text gives no evidence."""


class Args:
    """An instruction's keyword arguments, read with the type each checker expects."""

    def __init__(
        self, instruction_id: str, kwargs: Mapping[str, Any], detect_language: Detector
    ) -> None:
        self.instruction_id = instruction_id
        self._kw = {k: v for k, v in kwargs.items() if v is not None}
        self.detect_language = detect_language

    def _get(self, name: str) -> Any:
        if name not in self._kw:
            raise DataError(
                f"{self.instruction_id}: missing argument {name!r} "
                f"(got {sorted(self._kw) or 'none'})."
            )
        return self._kw[name]

    def integer(self, name: str) -> int:
        v = self._get(name)
        if isinstance(v, bool) or not isinstance(v, int):
            raise DataError(
                f"{self.instruction_id}: argument {name!r} must be an integer, got {v!r}."
            )
        return v

    def text(self, name: str) -> str:
        v = self._get(name)
        if not isinstance(v, str):
            raise DataError(f"{self.instruction_id}: argument {name!r} must be text, got {v!r}.")
        return v

    def texts(self, name: str) -> list[str]:
        v = self._get(name)
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise DataError(
                f"{self.instruction_id}: argument {name!r} must be a list of strings, got {v!r}."
            )
        return list(v)

    def relation(self, name: str) -> str:
        rel = self.text(name)
        if rel not in _RELATIONS:
            raise DataError(
                f"{self.instruction_id}: relation {rel!r} is not one of "
                f"{', '.join(sorted(_RELATIONS))}."
            )
        return rel


_RELATIONS = {"at least", "less than"}


def compare(count: int, relation: str, bound: int) -> bool:
    """IFEval's two relations: ``at least`` is ``count >= bound``, ``less than`` is
    ``count < bound``."""
    return count >= bound if relation == "at least" else count < bound


Checker = Callable[[str, Args], bool]
CHECKERS: dict[str, Checker] = {}
"""instruction id -> checker, filled as the family modules are imported."""


def checker(instruction_id: str) -> Callable[[Checker], Checker]:
    def wrap(fn: Checker) -> Checker:
        if instruction_id in CHECKERS:
            raise ValueError(f"duplicate IFEval checker {instruction_id!r}")
        CHECKERS[instruction_id] = fn
        return fn

    return wrap
