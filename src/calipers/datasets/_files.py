"""Local data files: JSON Lines, JSON arrays and CSV, each row with its line number."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from calipers._util.jsonl import JsonlError, read_jsonl
from calipers.errors import DataError, TaskSpecError

__all__ = ["read_records"]


def read_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line, record)`` from a .jsonl, .json (array of objects) or .csv file."""
    if not path.exists():
        raise DataError(
            f"Data file {path} does not exist.", hint="Check the path in the task spec."
        )
    suffix = path.suffix.lower()
    try:
        if suffix in {".jsonl", ".ndjson"}:
            yield from read_jsonl(path)
        elif suffix == ".csv":
            with path.open(newline="", encoding="utf-8") as f:
                reader = csv.DictReader(f)
                for row in reader:
                    yield reader.line_num, dict(row)
        elif suffix == ".json":
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data, list):
                raise TaskSpecError(f"{path}: expected a JSON array of objects.")
            for i, row in enumerate(data):
                if not isinstance(row, dict):
                    raise TaskSpecError(f"{path}: item {i} is not an object.")
                yield i + 1, row
        else:
            raise TaskSpecError(
                f"{path}: unsupported data format {suffix or '(none)'}.",
                hint="Use .jsonl, .json (array of objects) or .csv.",
            )
    except JsonlError as e:
        raise TaskSpecError(str(e)) from None
    except json.JSONDecodeError as e:
        raise TaskSpecError(f"{path}:{e.lineno}: not valid JSON ({e.msg}).") from None
    except UnicodeDecodeError:
        raise TaskSpecError(f"{path}: not UTF-8 text.") from None
