"""Facts about a large file (its sha256, a parsed header), remembered on disk between
processes.

Hashing the 100 MB embedded model took a noticeable part of every command that names it, on
every run, even when every answer came from the response cache (and parsing its header, with
its 100,000 vocabulary strings, another 50-100 ms). The facts are kept in
``$CALIPERS_HOME/digests.json`` (``./.calipers/digests.json`` without ``CALIPERS_HOME``), one
entry per real path, and used only while the file's device, inode, size, modification time
and status-change time are all what they were when they were computed; any change recomputes
them. The status-change time (``st_ctime_ns``) cannot be set back by a user, so ``touch -d`` to an
old date, or a file replaced by one of the same size, still re-hashes.

A fact is stored only when the file did not change while it was read and was last modified
(or had its status changed) more than ``RACY_S`` seconds before: a write within the same
clock tick as the hash would leave the stamp unchanged (git's "racily clean" case). Reading
or writing the cache never fails a command: a missing, unreadable or corrupt cache is a miss,
and an unwritable one is skipped. Writes go to a temporary file renamed over the old one, so a
reader never sees half a file.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from calipers._util.home import calipers_home, make_folder
from calipers.errors import CalipersError

__all__ = ["RACY_S", "cached_file_fact", "cached_file_sha256"]

RACY_S = 2.0
MAX_ENTRIES = 256
_FILE = "digests.json"
_VERSION = 1


def _stamp(st: os.stat_result) -> list[int]:
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def _read(cache: Path) -> dict[str, Any]:
    try:
        data = json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != _VERSION:
        return {}
    entries = data.get("entries")
    return entries if isinstance(entries, dict) else {}


def _write(cache: Path, entries: dict[str, Any]) -> None:
    with contextlib.suppress(OSError, CalipersError):
        make_folder(cache.parent, "the calipers home", private=True)  # as the store makes it
        fd, tmp = tempfile.mkstemp(dir=cache.parent, prefix=".digests-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({"version": _VERSION, "entries": entries}, f, indent=1)
            os.replace(tmp, cache)
        except OSError:
            os.unlink(tmp)
            raise


def _facts(entry: Any, stamp: list[int]) -> dict[str, Any]:
    """The facts of a cache entry when its stamp is ``stamp``, else none."""
    if not isinstance(entry, dict) or entry.get("stamp") != stamp:
        return {}
    facts = entry.get("facts")
    return facts if isinstance(facts, dict) else {}


def cached_file_fact(
    path: Path, name: str, compute: Callable[[Path], Any], home: Path | None = None
) -> Any:
    """``compute(path)`` (a JSON value: a digest, a parsed header), from the cache under
    ``home`` (default :func:`calipers_home`) when the file is unchanged since it was computed.
    An exception from ``compute`` propagates and nothing is stored."""
    real = os.path.realpath(path)
    cache = (home or calipers_home()) / _FILE
    before = os.stat(real)
    facts = _facts(_read(cache).get(real), _stamp(before))
    if name in facts:
        return facts[name]
    value = compute(Path(real))
    after = os.stat(real)
    changed_ns = max(after.st_mtime_ns, after.st_ctime_ns)
    if _stamp(after) == _stamp(before) and time.time() - changed_ns / 1e9 > RACY_S:
        entries = _read(cache)  # re-read: another process may have written meanwhile
        kept = _facts(entries.pop(real, None), _stamp(after))
        entries[real] = {"stamp": _stamp(after), "facts": {**kept, name: value}}
        _write(cache, dict(list(entries.items())[-MAX_ENTRIES:]))
    return value


def cached_file_sha256(path: Path, home: Path | None = None) -> str:
    """The full hex sha256 of ``path``'s bytes, through :func:`cached_file_fact`."""
    return str(cached_file_fact(path, "sha256", _sha256, home))
