"""Reading the Lost in the Middle data files (``nelson-liu/lost-in-the-middle``): gzipped JSON
Lines, each row with its line number, parsed once per file while its modification time and size
are unchanged.

The files are read from a local data directory only (``--data-dir``, ``CALIPERS_DATA``, folder
``lost_in_the_middle/``): the Hugging Face hub holds no copy of these exact files that calipers
can check against the originals (``bzantium/LITM`` reshaped them), so without a data directory
the error says where to get them.
"""

from __future__ import annotations

import functools
import gzip
import json
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from calipers.datasets import benchmark_file
from calipers.errors import DataError
from calipers.types import Sample

__all__ = ["BENCHMARK", "HOW", "LICENSE", "SOURCE", "litm_file", "litm_items", "read_rows"]

BENCHMARK = "lost_in_the_middle"
SOURCE = "nelson-liu/lost-in-the-middle@29b8a6d042ce29abccee3db1a73171a107d7e6af"
LICENSE = "MIT (code); NQ questions CC BY-SA 3.0; passages Wikipedia (CC BY-SA)"
HOW = (
    "Put qa_data/nq-open-oracle.jsonl.gz and kv_retrieval_data/kv-retrieval-75_keys.jsonl.gz "
    "from github.com/nelson-liu/lost-in-the-middle (left compressed) in "
    "<data-dir>/lost_in_the_middle/, keeping the folders; see docs/rag-tasks.md."
)


def read_rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """The ``(line, row)`` pairs of a gzipped JSON Lines file (DataError with file:line)."""
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as e:
        raise DataError(f"{path} is not a readable gzip file ({e}).", hint=HOW) from None
    out = []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataError(f"{path}:{i}: not JSON ({e.msg}).", hint=HOW) from None
        if not isinstance(rec, dict):
            raise DataError(f"{path}:{i}: expected a JSON object.", hint=HOW)
        out.append((i, rec))
    if not out:
        raise DataError(f"{path} holds no rows.", hint=HOW)
    return out


def litm_file(relpath: str, data_dir: Path | str | None) -> tuple[Path, tuple[int, int]]:
    """The file ``<data-dir>/lost_in_the_middle/<relpath>`` and its stamp (modification time,
    size), the key loaders cache their parsed items under."""
    path = benchmark_file(BENCHMARK, relpath, data_dir, how_to_get=HOW)
    st = path.stat()
    return path, (st.st_mtime_ns, st.st_size)


RowToSample = Callable[[int, dict[str, Any], str], Sample]  # (index, row, "file:line") -> item


@functools.lru_cache(maxsize=4)
def _items(path: Path, _stamp: tuple[int, int], to_sample: RowToSample) -> tuple[Sample, ...]:
    rows = read_rows(path)
    return tuple(to_sample(i, row, f"{path}:{line}") for i, (line, row) in enumerate(rows))


def litm_items(relpath: str, data_dir: Path | str | None, to_sample: RowToSample) -> list[Sample]:
    """Every item of a file, in file order, parsed once per file version (its stamp)."""
    path, stamp = litm_file(relpath, data_dir)
    return list(_items(path, stamp, to_sample))
