"""Reading JSON Lines with line numbers in every error."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["JsonlError", "read_jsonl"]


class JsonlError(ValueError):
    def __init__(self, path: Path, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}")
        self.path = path
        self.line = line


def read_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line; each line must be a JSON object."""
    p = Path(path)
    with p.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise JsonlError(p, lineno, f"not valid JSON ({e.msg} at column {e.colno})") from e
            if not isinstance(obj, dict):
                raise JsonlError(p, lineno, f"expected a JSON object, got {type(obj).__name__}")
            yield lineno, obj
