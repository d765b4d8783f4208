"""A persisted index of a training corpus's hashed word n-grams: ``build_index`` and
``open_index``.

An index is a directory holding ``filter.bin`` (the Bloom filter's words, memory-mapped when
checking) and ``index.json`` (:class:`IndexInfo`: n, the filter's layout, the tokenisation id,
what was read, the false-positive rate). ``index.json`` is written last, so a directory
without it is an unfinished build; an index built with another tokenisation is refused.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from calipers._util.clock import utc_now
from calipers._util.environment import calipers_version
from calipers._util.home import make_folder
from calipers.contamination._bloom import (
    NEGLIGIBLE_FP,
    BloomFilter,
    Layout,
    best_layout,
    expected_fp_rate,
)
from calipers.contamination._corpus import (
    Progress,
    corpus_files,
    estimated_text_bytes,
    stream_corpus,
)
from calipers.contamination._ngram_hash import TOKENISATION, U64, NgramStream
from calipers.errors import ConfigError, DataError

__all__ = [
    "DEFAULT_MEMORY_MB",
    "DEFAULT_N",
    "CorpusIndex",
    "IndexFile",
    "IndexInfo",
    "build_index",
    "open_index",
]

DEFAULT_N = 13
DEFAULT_MEMORY_MB = 512.0
FORMAT: Literal["calipers-ngram-bloom"] = "calipers-ngram-bloom"
FORMAT_VERSION = 1
_INFO, _FILTER = "index.json", "filter.bin"
_BYTES_PER_NGRAM = 6  # about one English word and a space: sizes the filter before reading
_BATCH = 8192  # keys per Bloom update: the touched words stay in cache
_WARN_FP = 1e-6


class IndexFile(BaseModel):
    """A corpus file as it was when indexed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    size: int
    mtime_ns: int


class IndexInfo(BaseModel):
    """The header of an index (``index.json``), also what :func:`build_index` returns."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal["calipers-ngram-bloom"] = FORMAT
    format_version: int = FORMAT_VERSION
    tokenisation: str = TOKENISATION
    n: int
    n_words: int = Field(description="64-bit words in the filter (a power of 2)")
    words_per_key: int
    bits_per_word: int
    expected_ngrams: int = Field(description="the estimate the layout was chosen for")
    ngrams_inserted: int = Field(description="n-grams added, repeats included")
    tokens: int
    documents: int
    text_bytes: int = Field(description="bytes of text read, after decompression")
    disk_bytes: int
    files: list[IndexFile]
    skipped_files: int
    skipped_records: int
    text_field: str
    fill_ratio: float
    fp_rate: float = Field(description="P(an n-gram absent from the corpus reads as present)")
    seconds: float
    created_at: datetime = Field(default_factory=utc_now)
    calipers_version: str = Field(default_factory=calipers_version)
    warnings: list[str] = Field(default_factory=list)

    @property
    def layout(self) -> Layout:
        return Layout(self.words_per_key, self.bits_per_word)

    @property
    def memory_bytes(self) -> int:
        return 8 * self.n_words

    @property
    def mb_per_s(self) -> float:
        """MiB of text indexed per second of wall time."""
        return self.text_bytes / 2**20 / self.seconds if self.seconds > 0 else math.nan


@dataclass(frozen=True)
class CorpusIndex:
    """An opened index: its directory, header and (memory-mapped) filter."""

    path: Path
    info: IndexInfo
    bloom: BloomFilter

    def contains(self, keys: U64) -> np.ndarray:
        return self.bloom.contains(keys)

    def changed_files(self) -> list[str]:
        """Corpus files that are missing or changed (size or time) since indexing."""
        out = []
        for f in self.info.files:
            p = Path(f.path)
            if not p.is_file():
                out.append(f"{f.path} (missing)")
                continue
            st = p.stat()
            if (st.st_size, st.st_mtime_ns) != (f.size, f.mtime_ns):
                out.append(f"{f.path} (changed)")
        return out


def _n_words(memory_mb: float) -> int:
    if not memory_mb > 0 or not math.isfinite(memory_mb):
        raise ConfigError(f"memory_mb must be a positive number, got {memory_mb!r}.")
    words = int(memory_mb * 2**20) // 8
    if words < 64:
        raise ConfigError(f"memory_mb={memory_mb} is below the smallest filter (512 bytes).")
    return 1 << (words.bit_length() - 1)  # rounded down to a power of 2


def _suggest_mb(n_keys: int, n_words: int) -> float:
    """The smallest power-of-two size at which ``n_keys`` keys reach ``NEGLIGIBLE_FP``."""
    words = n_words
    while words < 2**40:
        words *= 2
        if expected_fp_rate(n_keys, words, best_layout(n_keys, words)) <= NEGLIGIBLE_FP:
            break
    return words * 8 / 2**20


def _prepare(out: Path, overwrite: bool) -> None:
    if (out / _INFO).exists() and not overwrite:
        raise ConfigError(
            f"{out} already holds an n-gram index.",
            hint="Choose another directory, delete it, or pass overwrite=True.",
        )
    make_folder(out, "the index folder")
    (out / _INFO).unlink(missing_ok=True)


def _warnings(
    info_fp: float,
    inserted: int,
    n_words: int,
    skipped_files: int,
    skipped_records: int,
    first_skipped: str | None,
) -> list[str]:
    out = []
    if info_fp > _WARN_FP:
        out.append(
            f"False-positive rate {info_fp:.2g} per n-gram is high for this corpus; "
            f"rebuild with memory_mb >= {_suggest_mb(inserted, n_words):g}."
        )
    if skipped_files:
        out.append(
            f"{skipped_files} file(s) in the given directories were not .txt/.jsonl "
            "(or .gz) and were skipped."
        )
    if skipped_records:
        out.append(
            f"{skipped_records} JSONL line(s) had no text and were skipped; first at "
            f"{first_skipped}."
        )
    return out


def build_index(
    paths: Sequence[str | Path],
    out: str | Path,
    *,
    memory_mb: float = DEFAULT_MEMORY_MB,
    n: int = DEFAULT_N,
    text_field: str = "text",
    expected_ngrams: int | None = None,
    progress: Progress | None = None,
    overwrite: bool = False,
) -> IndexInfo:
    """Index every word n-gram of the corpus at ``paths`` into the directory ``out``.

    Memory: the filter (``memory_mb``, rounded down to a power of 2) plus working buffers of
    a few MiB, whatever the corpus size. ``expected_ngrams`` (default: estimated from the
    file sizes) chooses the filter's layout; the false-positive rate reported is measured on
    the filter as built, not assumed.
    """
    if n < 1:
        raise ConfigError(f"n must be positive, got {n}.")
    started = time.perf_counter()
    files, skipped_files = corpus_files(paths)
    n_words = _n_words(memory_mb)
    dest = Path(out)
    _prepare(dest, overwrite)
    expected = expected_ngrams or max(1, estimated_text_bytes(files) // _BYTES_PER_NGRAM)
    bloom = BloomFilter.empty(n_words, best_layout(expected, n_words))

    def sink(keys: U64) -> None:
        for start in range(0, keys.size, _BATCH):
            bloom.add(keys[start : start + _BATCH])

    stream = NgramStream(n, sink)
    stats = stream_corpus(files, stream, text_field=text_field, progress=progress)
    tmp = dest / (_FILTER + ".tmp")
    bloom.save(tmp)
    os.replace(tmp, dest / _FILTER)
    fill, fp = bloom.fill_and_fp_rate()
    info = IndexInfo(
        n=n,
        n_words=n_words,
        words_per_key=bloom.layout.words_per_key,
        bits_per_word=bloom.layout.bits_per_word,
        expected_ngrams=expected,
        ngrams_inserted=stream.ngrams,
        tokens=stream.tokens,
        documents=stream.documents,
        text_bytes=stats.text_bytes,
        disk_bytes=stats.disk_bytes,
        files=[IndexFile(path=str(f.path), size=f.size, mtime_ns=f.mtime_ns) for f in files],
        skipped_files=skipped_files,
        skipped_records=stats.skipped_records,
        text_field=text_field,
        fill_ratio=fill,
        fp_rate=fp,
        seconds=time.perf_counter() - started,
        warnings=_warnings(
            fp, stream.ngrams, n_words, skipped_files, stats.skipped_records, stats.first_skipped
        ),
    )
    tmp = dest / (_INFO + ".tmp")
    tmp.write_text(info.model_dump_json(indent=2), encoding="utf-8")
    os.replace(tmp, dest / _INFO)
    return info


def _read_info(path: Path) -> IndexInfo:
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as e:
        raise DataError(f"Cannot read the index header {path}: {e}.") from None
    try:
        info = IndexInfo.model_validate_json(raw)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise DataError(
            f"{path} is not a calipers n-gram index header ({where}: {first['msg']}).",
            hint="Build the index with calipers (build_index).",
        ) from None
    if info.format_version != FORMAT_VERSION:
        raise DataError(
            f"{path} has index format version {info.format_version}; this "
            f"calipers reads version {FORMAT_VERSION}.",
            hint="Rebuild the index.",
        )
    return info


def open_index(path: str | Path) -> CorpusIndex:
    """Open the index in directory ``path`` (or its ``index.json``); refuse one built with a
    different tokenisation or format, or whose filter file does not match its header."""
    p = Path(path)
    folder = p.parent if p.name == _INFO else p
    header = folder / _INFO
    if not header.is_file():
        raise DataError(
            f"No n-gram index at {folder} ({_INFO} is missing).",
            hint="Build one with build_index; an interrupted build leaves no header.",
        )
    info = _read_info(header)
    if info.tokenisation != TOKENISATION:
        raise DataError(
            f"The index at {folder} was built with tokenisation {info.tokenisation!r}, but "
            f"this calipers uses {TOKENISATION!r}: its n-grams would never match.",
            hint="Rebuild the index with this version of calipers.",
        )
    data = folder / _FILTER
    size = data.stat().st_size if data.is_file() else -1
    if size != 8 * info.n_words:
        raise DataError(
            f"{data} holds {size} bytes, but the header says {8 * info.n_words}.",
            hint="The index is damaged; rebuild it.",
        )
    return CorpusIndex(folder, info, BloomFilter.open(data, info.n_words, info.layout))
