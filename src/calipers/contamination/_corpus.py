"""Reading a training corpus as a stream of text: .txt and .jsonl files, gzipped or not,
and directories of them (recursive, in sorted order).

A text file is one document, read in blocks cut at whitespace; a JSON Lines file holds one
document per line, in the field ``text_field``. Memory stays bounded by the block size (a
JSONL record longer than a block is fed in pieces too).
"""

from __future__ import annotations

import codecs
import gzip
import json
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from calipers.contamination._ngram_hash import NgramStream
from calipers.errors import ConfigError, DataError

__all__ = [
    "BLOCK_CHARS",
    "CorpusFile",
    "ReadStats",
    "corpus_files",
    "estimated_text_bytes",
    "stream_corpus",
]

BLOCK_CHARS = 1 << 18
"""Characters per block: small enough for the working arrays to stay in cache."""
_TEXT = (".txt", ".text", ".md")
_JSONL = (".jsonl", ".ndjson")
_GZ_RATIO = 4  # assumed expansion of gzipped text, only to size the filter before reading
Kind = Literal["text", "jsonl"]
Progress = Callable[[int, int], object]
"""``progress(bytes done, bytes total)``, counted in bytes on disk (compressed for .gz)."""


@dataclass(frozen=True)
class CorpusFile:
    path: Path
    kind: Kind
    gzipped: bool
    size: int
    mtime_ns: int


def _classify(path: Path) -> tuple[Kind, bool] | None:
    name = path.name.lower()
    gz = name.endswith(".gz")
    stem = name[:-3] if gz else name
    if stem.endswith(_TEXT):
        return "text", gz
    if stem.endswith(_JSONL):
        return "jsonl", gz
    return None


def _entry(path: Path, kind: Kind, gz: bool) -> CorpusFile:
    st = path.stat()
    return CorpusFile(path.resolve(), kind, gz, st.st_size, st.st_mtime_ns)


def corpus_files(paths: Sequence[str | Path]) -> tuple[list[CorpusFile], int]:
    """The corpus files named by ``paths`` (files, or directories searched recursively in
    sorted order) and how many files inside the directories were skipped as unsupported."""
    found: list[CorpusFile] = []
    skipped = 0
    for p in map(Path, paths):
        if p.is_dir():
            for f in sorted(q for q in p.rglob("*") if q.is_file()):
                kind = _classify(f)
                if kind is None:
                    skipped += 1
                else:
                    found.append(_entry(f, *kind))
        elif p.is_file():
            kind = _classify(p)
            if kind is None:
                raise ConfigError(
                    f"Corpus file {p} is not .txt/.text/.md or .jsonl/.ndjson (optionally .gz).",
                    hint="Convert it to plain text or JSON Lines, or pass its directory.",
                )
            found.append(_entry(p, *kind))
        else:
            raise DataError(f"Corpus path {p} does not exist.", hint="Check the path.")
    if not found:
        where = ", ".join(map(str, paths))
        raise DataError(
            f"No corpus files (.txt, .jsonl, .gz) found in {where}.",
            hint="Pass files or directories that hold the training text.",
        )
    return found, skipped


def estimated_text_bytes(files: Sequence[CorpusFile]) -> int:
    """Bytes of text expected after decompression (gzip assumed to shrink text 4 times)."""
    return sum(f.size * (_GZ_RATIO if f.gzipped else 1) for f in files)


@dataclass
class ReadStats:
    """What reading the corpus met: bytes of text after decompression, bytes on disk, JSONL
    lines skipped (not JSON, or without the text field) and where the first one was."""

    text_bytes: int = 0
    disk_bytes: int = 0
    skipped_records: int = 0
    first_skipped: str | None = None


@contextmanager
def _open(f: CorpusFile) -> Iterator[tuple[IO[bytes], IO[bytes]]]:
    """``(raw file, stream to read)``: the raw file's position is the progress on disk."""
    with f.path.open("rb") as raw:
        if f.gzipped:
            with gzip.GzipFile(fileobj=raw, mode="rb") as gz:
                yield raw, gz  # type: ignore[misc]
        else:
            yield raw, raw


def _cut(text: str) -> int:
    """Where to end a block: after the last whitespace, else after the last character that
    is not a letter or digit, else nowhere (0: the whole block is one token so far)."""
    cut = max(text.rfind(" "), text.rfind("\n"))
    if cut >= 0:
        return cut + 1
    i = len(text) - 1
    while i >= 0 and text[i].isalnum():
        i -= 1
    return i + 1


def _feed_text(
    stream: NgramStream, reader: Callable[[int], bytes], stats: ReadStats, tick: Callable[[], None]
) -> None:
    """Feed one document read through ``reader`` in blocks cut between tokens."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    pending = ""
    while raw := reader(BLOCK_CHARS):
        stats.text_bytes += len(raw)
        text = pending + decoder.decode(raw)
        cut = _cut(text)
        if cut == 0 and len(text) < 4 * BLOCK_CHARS:
            pending = text  # no boundary yet: read on
            continue
        cut = cut or len(text)  # a run of letters over 4 blocks long is split where it is
        stream.feed(text[:cut])
        pending = text[cut:]
        tick()
    stream.feed(pending + decoder.decode(b"", final=True))
    stream.end_document()


def _feed_long(stream: NgramStream, text: str) -> None:
    """One document longer than a block, fed in pieces cut between tokens."""
    start = 0
    while start < len(text):
        end = min(len(text), start + BLOCK_CHARS)
        if end < len(text):
            cut = _cut(text[start:end])
            end = start + cut if cut > 0 else end
        stream.feed(text[start:end])
        start = end
    stream.end_document()


def _skip(stats: ReadStats, where: str) -> None:
    stats.skipped_records += 1
    stats.first_skipped = stats.first_skipped or where


def _record_text(line: bytes, field_name: str, stats: ReadStats, where: str) -> str | None:
    if not line.strip():
        return None
    try:
        record = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError):
        _skip(stats, f"{where}: not JSON")
        return None
    value = record.get(field_name) if isinstance(record, dict) else None
    if not isinstance(value, str):
        _skip(stats, f"{where}: no string field {field_name!r}")
        return None
    return value


def _feed_jsonl(
    stream: NgramStream,
    lines: IO[bytes],
    path: Path,
    field_name: str,
    stats: ReadStats,
    tick: Callable[[], None],
) -> None:
    batch: list[str] = []
    size = 0
    for number, line in enumerate(lines, start=1):
        stats.text_bytes += len(line)
        text = _record_text(line, field_name, stats, f"{path}:{number}")
        if text is None:
            continue
        if len(text) > BLOCK_CHARS:
            _feed_long(stream, text)
            continue
        batch.append(text)
        size += len(text)
        if size >= BLOCK_CHARS:
            stream.add_documents(batch)
            batch, size = [], 0
            tick()
    stream.add_documents(batch)


def stream_corpus(
    files: Sequence[CorpusFile],
    stream: NgramStream,
    *,
    text_field: str = "text",
    progress: Progress | None = None,
) -> ReadStats:
    """Feed every file to ``stream``; report progress in bytes on disk."""
    stats = ReadStats()
    total = sum(f.size for f in files)
    for f in files:
        with _open(f) as (raw, body):

            def tick(raw: IO[bytes] = raw) -> None:
                if progress is not None:
                    progress(stats.disk_bytes + raw.tell(), total)

            try:
                if f.kind == "text":
                    _feed_text(stream, body.read, stats, tick)
                else:
                    _feed_jsonl(stream, body, f.path, text_field, stats, tick)
            except (OSError, EOFError, zlib.error) as e:
                raise DataError(
                    f"Cannot read corpus file {f.path}: {e}.",
                    hint="Check that the file is complete (a truncated .gz?).",
                ) from e
        stats.disk_bytes += f.size
        if progress is not None:
            progress(stats.disk_bytes, total)
    return stats
