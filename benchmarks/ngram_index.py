"""n-gram overlap index: MB/s of corpus indexed, peak memory, and the time to check MMLU.

Writes a seeded synthetic corpus (``--size-mb`` of English-like word salad with punctuation,
capitals and a few non-ASCII characters, with MMLU test items planted in it) to a temporary
folder, or reads ``--corpus``; indexes it with ``build_index`` (a ``--memory-mb`` Bloom
filter of hashed 13-grams); then checks all MMLU test items (14,042 questions from the data
directory) against it and verifies every planted item is flagged (items are planted only
if they have at least 13 tokens: shorter ones have no 13-gram to find). Wall time is what a user
waits; CPU time is what this process used (the machine may be shared).

    python benchmarks/ngram_index.py [--size-mb 200] [--memory-mb 512] [--corpus PATH...]
                                     [--data-dir /work/shared/data] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from calipers.contamination import _bloom
from calipers.contamination._corpus import corpus_files, stream_corpus
from calipers.contamination._items import task_item_texts
from calipers.contamination._ngram import ngram_check
from calipers.contamination._ngram_hash import NgramStream, text_ngrams
from calipers.contamination._ngram_index import build_index, open_index

MiB = 2**20
_CHUNK_WORDS = 400_000
_EXTRA = ["“", "”", "—", "’s", "é", "café", "naïve", "(", ")", "e.g.", "%", "3.5", "1999"]


def _vocabulary(rng: np.random.Generator, size: int = 50_000) -> np.ndarray:
    letters = np.array(list("etaoinshrdlcumwfgypbvkjxqz"))
    weights = 1.0 / np.arange(1, 27) ** 0.9
    lengths = np.clip(rng.poisson(4.2, size) + 1, 1, 14)
    words = ["".join(rng.choice(letters, size=n, p=weights / weights.sum())) for n in lengths]
    return np.array(words + _EXTRA)


def _text_chunk(rng: np.random.Generator, vocab: np.ndarray, zipf: np.ndarray) -> str:
    words = vocab[rng.choice(vocab.size, size=_CHUNK_WORDS, p=zipf)].astype(object)
    words[rng.random(_CHUNK_WORDS) < 0.06] += ","
    quoted = rng.random(_CHUNK_WORDS) < 0.004  # web text: curly quotes make it non-ASCII
    words[quoted] = ["“" + w + "”" for w in words[quoted]]
    ends = rng.random(_CHUNK_WORDS) < 0.07
    words[ends] += "."
    starts = np.flatnonzero(np.roll(ends, 1))
    words[starts] = [w.capitalize() for w in words[starts]]
    words[rng.random(_CHUNK_WORDS) < 0.01] += "\n\n"
    return " ".join(words.tolist())


def write_corpus(folder: Path, size_mb: float, planted: list[str], seed: int) -> int:
    """Seeded corpus of about ``size_mb`` MiB in 4 files (3 .txt, 1 .jsonl); returns bytes."""
    rng = np.random.default_rng(seed)
    vocab = _vocabulary(rng)
    zipf = 1.0 / np.arange(1, vocab.size + 1) ** 1.05
    zipf /= zipf.sum()
    target, written, k, per_chunk = int(size_mb * MiB), 0, 0, 0
    files = [(folder / f"part{i}.txt").open("w", encoding="utf-8") for i in range(3)]
    jsonl = (folder / "docs.jsonl").open("w", encoding="utf-8")
    try:
        while written < target:
            text = _text_chunk(rng, vocab, zipf)
            per_chunk = per_chunk or -(-len(planted) * len(text) // target)
            here = planted[k : k + per_chunk]  # at random places between words
            cuts = sorted(text.find(" ", int(c)) + 1 for c in rng.integers(0, len(text), len(here)))
            pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
            text = "".join(
                p + (f"{i} " if i else "") for p, i in zip(pieces, [*here, ""], strict=True)
            )
            k += per_chunk
            if written // (8 * MiB) % 4 == 3:
                for part in text.split("\n\n"):
                    jsonl.write(json.dumps({"text": part, "meta": {"n": written}}) + "\n")
            else:
                files[written // (8 * MiB) % 4].write(text + "\n")
            written += len(text.encode("utf-8"))
        files[0].write(" ".join(planted[k:]) + "\n")  # any item the chunks had no room for
    finally:
        for f in [*files, jsonl]:
            f.close()
    return written


class _Timer:
    """Adds up the time spent in a wrapped function."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start

        return timed


def run(args: argparse.Namespace) -> dict[str, Any]:
    data_dir = args.data_dir or os.environ.get("CALIPERS_DATA") or "/work/shared/data"
    start = time.perf_counter()
    items = task_item_texts("mmlu", data_dir=data_dir)
    load_s = time.perf_counter() - start
    rng = np.random.default_rng(args.seed)
    checkable = np.flatnonzero(text_ngrams([t for _, t in items], 13)[2] >= 13)
    planted_idx = sorted(rng.choice(checkable, size=args.planted, replace=False).tolist())
    tmp = Path(tempfile.mkdtemp(prefix="calipers-ngram-bench-"))
    try:
        if args.corpus:
            corpus, generated = [Path(p) for p in args.corpus], False
        else:
            corpus, generated = [tmp / "corpus"], True
            corpus[0].mkdir()
            # (a blank line would end a JSONL document in the middle of the item)
            planted = [items[i][1].replace("\n\n", "\n") for i in planted_idx]
            write_corpus(corpus[0], args.size_mb, planted, args.seed)
        adding, saving = _Timer(), _Timer()
        bloom = _bloom.BloomFilter
        bloom.add, bloom.save = adding.wrap(bloom.add), saving.wrap(bloom.save)  # type: ignore[method-assign]
        cpu, wall = time.process_time(), time.perf_counter()
        info = build_index(corpus, tmp / "index", memory_mb=args.memory_mb)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
        load = os.getloadavg()[0]
        check_start = time.perf_counter()
        report = ngram_check(items, open_index(tmp / "index"))
        check_s = time.perf_counter() - check_start
        hash_cpu = time.process_time()  # the same corpus read and hashed, no filter
        stream_corpus(corpus_files(corpus)[0], NgramStream(13, lambda keys: None))
        hash_cpu = time.process_time() - hash_cpu
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    flagged = set(report.overlapping_ids)
    found = sum(items[i][0] in flagged for i in planted_idx) if generated else None
    mib = info.text_bytes / MiB
    return {
        "corpus_mib": mib,
        "files": len(info.files),
        "generated": generated,
        "ngrams": info.ngrams_inserted,
        "memory_mib": info.memory_bytes / MiB,
        "layout": f"{info.words_per_key} words x {info.bits_per_word} bits",
        "fp_rate": info.fp_rate,
        "index_wall_s": wall,
        "index_cpu_s": cpu,
        "mib_per_s_wall": mib / wall,
        "mib_per_s_cpu": mib / cpu,
        "bloom_add_s": adding.seconds,
        "filter_write_s": saving.seconds,
        "hash_only_cpu_s": hash_cpu,
        "hash_only_mib_per_s_cpu": mib / hash_cpu,
        "peak_rss_mib": rss,
        "load_average_1min": load,
        "cpus": os.cpu_count(),
        "mmlu_items": len(items),
        "mmlu_load_s": load_s,
        "check_s": check_s,
        "items_per_s": len(items) / check_s,
        "flagged": len(flagged),
        "planted": args.planted if generated else None,
        "planted_found": found,
        "too_short": report.n_too_short,
    }


def _table(r: dict[str, Any]) -> Table:
    t = Table(
        title=f"n-gram index: {r['corpus_mib']:,.0f} MiB corpus "
        f"({'synthetic' if r['generated'] else 'given'}), {r['memory_mib']:,.0f} MiB "
        "filter",
        title_justify="left",
    )
    t.add_column("measure")
    t.add_column("value", justify="right")
    rows = [
        ("13-grams indexed", f"{r['ngrams']:,}"),
        ("filter layout / false-positive rate", f"{r['layout']} / {r['fp_rate']:.2g}"),
        ("indexing, wall (MiB/s)", f"{r['index_wall_s']:.1f} s ({r['mib_per_s_wall']:.1f})"),
        ("indexing, CPU (MiB/s)", f"{r['index_cpu_s']:.1f} s ({r['mib_per_s_cpu']:.1f})"),
        ("  of which adding to the filter (wall)", f"{r['bloom_add_s']:.1f} s"),
        ("  of which writing the filter (wall)", f"{r['filter_write_s']:.1f} s"),
        (
            "reading + hashing only, no filter, CPU (MiB/s)",
            f"{r['hash_only_cpu_s']:.1f} s ({r['hash_only_mib_per_s_cpu']:.1f})",
        ),
        ("peak RSS of the process", f"{r['peak_rss_mib']:,.0f} MiB"),
        (
            "machine: CPUs / load average after indexing",
            f"{r['cpus']} / {r['load_average_1min']:.1f}",
        ),
        (f"loading {r['mmlu_items']:,} MMLU test items", f"{r['mmlu_load_s']:.2f} s"),
        ("checking them", f"{r['check_s']:.2f} s ({r['items_per_s']:,.0f} items/s)"),
        ("items flagged / too short", f"{r['flagged']:,} / {r['too_short']:,}"),
    ]
    if r["planted"] is not None:
        rows.append(("planted items found", f"{r['planted_found']} of {r['planted']}"))
    for row in rows:
        t.add_row(*row)
    return t


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--size-mb", type=float, default=200.0, help="synthetic corpus size")
    ap.add_argument("--corpus", nargs="+", help="index these files/folders instead")
    ap.add_argument("--memory-mb", type=float, default=512.0, help="Bloom filter size")
    ap.add_argument("--planted", type=int, default=500, help="MMLU items put in the corpus")
    ap.add_argument("--data-dir", help="benchmark data (default $CALIPERS_DATA)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    result = run(args)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        Console(width=110).print(_table(result))


if __name__ == "__main__":
    main()
