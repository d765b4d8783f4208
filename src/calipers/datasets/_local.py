"""Finding a benchmark's original files in a local data directory.

The directory comes from ``--data-dir`` or ``CALIPERS_DATA``; a benchmark's files live under
``<dir>/<benchmark>/`` in their original layout and format (see ``docs/benchmarks.md``). When
no directory is set, the built-in benchmarks load from the Hugging Face hub instead
(``calipers.datasets._hub``); :func:`benchmark_dir` is then only reached by code that has no
hub copy, and its error says so.
"""

from __future__ import annotations

import os
from pathlib import Path

from calipers.errors import DataError

__all__ = ["benchmark_dir", "benchmark_file", "data_root"]


def data_root(data_dir: Path | str | None) -> Path | None:
    """The data directory: the argument, else ``$CALIPERS_DATA``, else None."""
    d = data_dir or os.environ.get("CALIPERS_DATA")
    return Path(d).expanduser() if d else None


def benchmark_dir(benchmark: str, data_dir: Path | str | None, *, how_to_get: str) -> Path:
    """``<data_dir>/<benchmark>``; a DataError that names the benchmark, where it looked and
    how to get the files when it is missing."""
    root = data_root(data_dir)
    if root is None:
        raise DataError(
            f"{benchmark}: no local data directory is set (--data-dir, CALIPERS_DATA), and "
            "these files have no Hugging Face hub copy that calipers loads.",
            hint=f"Pass --data-dir DIR (or set CALIPERS_DATA) with {benchmark}/ inside. "
            f"{how_to_get}",
        )
    folder = root / benchmark
    if not folder.is_dir():
        raise DataError(
            f"{benchmark}: expected the folder {folder}, which does not exist.",
            hint=how_to_get,
        )
    return folder


def benchmark_file(
    benchmark: str, relpath: str, data_dir: Path | str | None, *, how_to_get: str
) -> Path:
    """One expected file of a benchmark, or a DataError naming it and where it looked."""
    path = benchmark_dir(benchmark, data_dir, how_to_get=how_to_get) / relpath
    if not path.is_file():
        raise DataError(
            f"{benchmark}: expected the file {relpath} in {path.parent}, which is missing.",
            hint=how_to_get,
        )
    return path
