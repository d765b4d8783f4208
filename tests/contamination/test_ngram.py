"""n-gram overlap with a training corpus: every figure checked against an independent
pure-Python reference (tokens, hashes, exact sets of n-grams) or a hand computation."""

from __future__ import annotations

import gzip
import io
import itertools
import json
import math
import unicodedata
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from calipers.analysis import StoredRun
from calipers.contamination import _corpus
from calipers.contamination._items import task_item_texts
from calipers.contamination._ngram import NgramReport, ngram_check
from calipers.contamination._ngram_hash import (
    NgramStream,
    fmix64,
    ngram_keys,
    text_ngrams,
    token_hashes,
)
from calipers.contamination._ngram_index import build_index, open_index
from calipers.contamination._ngram_render import render_ngram_report
from calipers.errors import ConfigError, DataError
from calipers.store import RunRecord, SampleRecord
from tests._data import DATA, needs_data, require

MASK = (1 << 64) - 1
B, M = 0x100000001B3, 0x9E3779B97F4A7C15


needs_mmlu = needs_data("mmlu/test")


# -- an independent reference: plain Python, one character and one n-gram at a time ----------


def ref_tokens(text: str) -> list[str]:
    text = unicodedata.normalize("NFKC", text)
    return "".join(c.lower()[0] if c.isalnum() else " " for c in text).split()


def ref_fmix(x: int) -> int:
    x ^= x >> 33
    x = (x * 0xFF51AFD7ED558CCD) & MASK
    x ^= x >> 33
    x = (x * 0xC4CEB9FE1A85EC53) & MASK
    return x ^ (x >> 33)


def ref_token_hash(token: str) -> int:
    return ref_fmix(sum(ord(c) * pow(B, i, 1 << 64) for i, c in enumerate(token)) & MASK)


def ref_ngram_hashes(tokens: list[str], n: int) -> list[int]:
    h = [ref_token_hash(t) for t in tokens]
    return [
        ref_fmix(sum(h[j + t] * pow(M, t, 1 << 64) for t in range(n)) & MASK)
        for j in range(len(h) - n + 1)
    ]


def ref_grams(text: str, n: int = 13) -> set[tuple[str, ...]]:
    toks = ref_tokens(text)
    return {tuple(toks[j : j + n]) for j in range(len(toks) - n + 1)}


def ref_counted(texts: dict[str, str]) -> dict[str, set[tuple[str, ...]]]:
    """Each item's n-grams, without those another item has too unless it has none of its
    own (the ``ignore_shared`` rule)."""
    grams = {i: ref_grams(t) for i, t in texts.items()}
    holders: dict[tuple[str, ...], int] = {}
    for g in grams.values():
        for x in g:
            holders[x] = holders.get(x, 0) + 1
    own = {i: {x for x in g if holders[x] == 1} for i, g in grams.items()}
    return {i: own[i] or grams[i] for i in grams}


WORDS = [f"w{i}q" for i in range(3000)]


def salad(rng: np.random.Generator, n_words: int) -> str:
    words = rng.choice(WORDS, size=n_words)
    return " ".join(f"{w}." if i % 17 == 16 else w for i, w in enumerate(words))


# -- tokens and hashes -------------------------------------------------------------------------


def test_tokens_and_hashes_match_the_reference() -> None:
    text = (
        "Hello, World! naïve café—“quoted” ﬁne x_y 3.14 ΑΒΓ straße İstanbul "
        "日本語テキスト e\u0301t\u00e9 ＦＵＬＬ"
    )
    assert ref_tokens(text)[:8] == ["hello", "world", "naïve", "café", "quoted", "fine", "x", "y"]
    assert [int(h) for h in token_hashes(text)] == [ref_token_hash(t) for t in ref_tokens(text)]
    toks = ref_tokens(text)
    got = ngram_keys(token_hashes(text), 5)
    assert [int(k) for k in got] == ref_ngram_hashes(toks, 5)
    assert ngram_keys(token_hashes("too few words"), 13).size == 0
    assert int(fmix64(np.array([12345], np.uint64))[0]) == ref_fmix(12345)


def test_items_are_separate_documents_and_counted() -> None:
    a, b = " ".join(f"a{i}" for i in range(13)), " ".join(f"b{i}" for i in range(12))
    keys, owner, tokens = text_ngrams([a, b, ""], 13)
    assert tokens.tolist() == [13, 12, 0]
    assert owner.tolist() == [0]  # no 13-gram runs from item a into item b
    assert [int(k) for k in keys] == ref_ngram_hashes(ref_tokens(a), 13)
    assert text_ngrams(["x\x00" + a, b], 13)[2].tolist() == [14, 12]  # NUL is no separator


def test_stream_finds_ngrams_across_block_boundaries() -> None:
    rng = np.random.default_rng(3)
    text = salad(rng, 400)
    whole: list[np.ndarray] = []
    NgramStream(13, whole.append).feed(text)
    spaces = [i + 1 for i, c in enumerate(text) if c == " "]
    for cuts in (spaces[::7], spaces[::50], [spaces[5]]):  # blocks of 7, 50 and 6 words
        parts: list[np.ndarray] = []
        s = NgramStream(13, parts.append)
        for lo, hi in zip([0, *cuts], [*cuts, len(text)], strict=True):
            s.feed(text[lo:hi])
        s.end_document()
        assert np.array_equal(np.concatenate(parts), np.concatenate(whole))
        assert s.ngrams == 400 - 12 and s.documents == 1
    docs: list[np.ndarray] = []
    s = NgramStream(13, docs.append)
    s.add_documents([text[: spaces[100]], text[spaces[100] :]])  # two documents: no bridge
    assert np.concatenate(docs).size == (100 - 12) + (300 - 12)
    assert s.documents == 2


# -- building and checking an index ------------------------------------------------------------


def _write_corpus(folder: Path, texts: list[str], rng: np.random.Generator) -> list[str]:
    """Spread ``texts`` over .txt, .txt.gz, .jsonl and .jsonl.gz files with filler between
    them; return the documents as the reader should see them."""
    folder.mkdir(parents=True)
    quarters = [texts[i::4] for i in range(4)]
    txt = "\n".join(f"{salad(rng, 300)}\n{t}" for t in quarters[0])
    (folder / "a.txt").write_text(txt, encoding="utf-8")
    gz = "\n".join(f"{salad(rng, 300)} {t}" for t in quarters[1])
    (folder / "sub").mkdir()
    (folder / "sub" / "b.txt.gz").write_bytes(gzip.compress(gz.encode()))
    records = [salad(rng, 100) for _ in range(5)] + [f"intro {t} outro" for t in quarters[2]]
    (folder / "c.jsonl").write_text(
        "".join(json.dumps({"text": r, "id": i}) + "\n" for i, r in enumerate(records))
        + "not json\n"
        + json.dumps({"body": "no text field"})
        + "\n",
        encoding="utf-8",
    )
    zrecords = [f"{t}" for t in quarters[3]] + [salad(rng, 50)]
    (folder / "d.jsonl.gz").write_bytes(
        gzip.compress("".join(json.dumps({"text": r}) + "\n" for r in zrecords).encode())
    )
    (folder / "notes.csv").write_text("skipped,file\n", encoding="utf-8")
    return [txt, gz, *records, *zrecords]


@pytest.fixture(scope="module")
def mmlu_items() -> list[tuple[str, str]]:
    require("mmlu/test")
    items = task_item_texts("mmlu", data_dir=DATA)
    rng = np.random.default_rng(5)
    picked = rng.choice(len(items), size=100, replace=False)
    return [items[i] for i in sorted(picked)]


@needs_mmlu
def test_flags_exactly_the_items_in_the_corpus(
    tmp_path: Path, mmlu_items: list[tuple[str, str]]
) -> None:
    rng = np.random.default_rng(7)
    long_enough = [it for it in mmlu_items if len(ref_tokens(it[1])) >= 13]
    planted = [long_enough[i] for i in rng.choice(len(long_enough), size=20, replace=False)]
    docs = _write_corpus(tmp_path / "corpus", [t for _, t in planted], rng)
    seen: list[tuple[int, int]] = []
    info = build_index(
        [tmp_path / "corpus"],
        tmp_path / "idx",
        memory_mb=1,
        progress=lambda done, total: seen.append((done, total)),
    )
    assert info.fp_rate < 1e-6 and info.documents == 2 + 5 + 5 + 6
    assert info.skipped_files == 1 and info.skipped_records == 2 and len(info.warnings) == 2
    assert seen[-1][0] == seen[-1][1] == sum(f.size for f in info.files)
    assert all(a[0] <= b[0] for a, b in itertools.pairwise(seen))
    corpus = set().union(*(ref_grams(d) for d in docs))
    assert info.ngrams_inserted == sum(max(0, len(ref_tokens(d)) - 12) for d in docs)

    gpt3 = ngram_check(mmlu_items, tmp_path / "idx", ignore_shared=False)
    truth = {i for i, t in mmlu_items if ref_grams(t) & corpus}  # any 13-gram in the corpus
    assert {i for i, _ in planted} <= truth
    assert set(gpt3.overlapping_ids) == truth  # recall 1.0, and no false positive
    report = ngram_check(mmlu_items, tmp_path / "idx")
    counted = ref_counted(dict(mmlu_items))
    flagged = {i for i, g in counted.items() if g & corpus}
    assert set(report.overlapping_ids) == flagged
    assert {i for i, _ in planted} <= flagged < truth  # here: 20 planted < 25 of GPT-3's
    by_id = {it.id: it for it in report.items}
    for i, t in mmlu_items:
        want = len(ref_tokens(t)) - 12
        assert by_id[i].ngrams + by_id[i].shared == max(0, want)
        if want > 0 and len(ref_grams(t)) == want:  # no repeated n-gram inside the item
            assert by_id[i].ngrams == len(counted[i])
            assert by_id[i].hits == len(counted[i] & corpus)
    assert all(by_id[i].ratio == 1.0 for i, _ in planted)
    holders = Counter(x for _, t in mmlu_items for x in ref_grams(t))
    assert report.n_shared_ngrams == sum(c > 1 for c in holders.values())
    short = [i for i, t in mmlu_items if len(ref_tokens(t)) < 13]
    assert report.n_too_short == len(short) and report.n_checked == 100 - len(short)
    assert all(by_id[i].status == "too_short" and by_id[i].ratio is None for i in short)
    assert report.n_overlapping == len(flagged)
    assert report.n_clean == 100 - len(short) - len(flagged)
    assert sum((report.ratio_histogram or {}).values()) == report.n_checked
    assert json.loads(report.model_dump_json())["status"] == "ok"


def test_ngrams_shared_between_items_identify_none_of_them(tmp_path: Path) -> None:
    rng = np.random.default_rng(21)
    stem = "For which of these two scenarios does the main character do something clearly wrong"
    a, b = f"{stem} {salad(rng, 20)}", f"{stem} {salad(rng, 20)}"
    items = [("a", a), ("b", b), ("a_copy", a), ("other", salad(rng, 30))]
    (tmp_path / "c.txt").write_text(f"{salad(rng, 200)} {a} {salad(rng, 200)}", encoding="utf-8")
    build_index([tmp_path / "c.txt"], tmp_path / "idx", memory_mb=1)
    report = ngram_check(items, tmp_path / "idx")
    # b shares only the stem with the corpus: it has n-grams of its own, none found. The
    # exact copy of a has no n-gram of its own, so it keeps all of them, and is found.
    assert report.overlapping_ids == ["a", "a_copy"]
    by_id = {it.id: it for it in report.items}
    assert by_id["b"].hits == 0 and by_id["b"].shared == len(ref_tokens(stem)) - 12
    assert by_id["a_copy"].shared == 0 and by_id["a_copy"].ratio == 1.0
    assert ngram_check(items, tmp_path / "idx", ignore_shared=False).overlapping_ids == [
        "a",
        "b",
        "a_copy",
    ]
    strict = ngram_check(items, tmp_path / "idx", ignore_shared=False, min_ratio=0.5)
    assert strict.overlapping_ids == ["a", "a_copy"] and "ratio >= 0.5" in strict.rule


def test_a_file_read_in_many_blocks_loses_no_ngram(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_corpus, "BLOCK_CHARS", 50)  # every item crosses block boundaries
    rng = np.random.default_rng(9)
    items = [(f"i{k}", salad(rng, 40)) for k in range(30)]
    body = "\n".join(salad(rng, 30) + "\n" + t for _, t in items[:10])
    (tmp_path / "c.txt").write_text(body, encoding="utf-8")
    info = build_index([tmp_path / "c.txt"], tmp_path / "idx", memory_mb=1)
    assert info.ngrams_inserted == len(ref_tokens(body)) - 12
    report = ngram_check(items, tmp_path / "idx")
    assert set(report.overlapping_ids) == {f"i{k}" for k in range(10)}
    assert all(it.ratio == 1.0 for it in report.items[:10])


def test_an_index_from_another_tokenisation_or_damaged_is_refused(tmp_path: Path) -> None:
    (tmp_path / "c.txt").write_text("some corpus text " * 50, encoding="utf-8")
    build_index([tmp_path / "c.txt"], tmp_path / "idx", memory_mb=0.01)
    assert open_index(tmp_path / "idx" / "index.json").info.n == 13
    header = tmp_path / "idx" / "index.json"
    good = json.loads(header.read_text())
    for change, message in [
        ({"tokenisation": "words-v0"}, "tokenisation"),
        ({"format_version": 99}, "format version"),
        ({"format": "something-else"}, "not a calipers n-gram index"),
        ({"n_words": good["n_words"] * 2}, "bytes"),
    ]:
        header.write_text(json.dumps(good | change))
        with pytest.raises(DataError, match=message):
            ngram_check([("x", "some corpus text " * 5)], tmp_path / "idx")
    header.unlink()
    with pytest.raises(DataError, match=r"index\.json is missing"):
        open_index(tmp_path / "idx")
    with pytest.raises(ConfigError, match="already holds"):
        header.write_text(json.dumps(good))
        build_index([tmp_path / "c.txt"], tmp_path / "idx", memory_mb=0.01)


def test_bad_inputs_say_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="does not exist"):
        build_index([tmp_path / "nope"], tmp_path / "idx")
    (tmp_path / "x.pdf").write_bytes(b"%PDF")
    with pytest.raises(ConfigError, match=r"not \.txt"):
        build_index([tmp_path / "x.pdf"], tmp_path / "idx")
    (tmp_path / "bad.txt.gz").write_bytes(gzip.compress(b"some text " * 100)[:40] + b"junk")
    with pytest.raises(DataError, match="Cannot read corpus file"):
        build_index([tmp_path / "bad.txt.gz"], tmp_path / "idx", memory_mb=1)
    (tmp_path / "c.txt").write_text("text " * 20, encoding="utf-8")
    with pytest.raises(ConfigError, match="memory_mb"):
        build_index([tmp_path / "c.txt"], tmp_path / "idx", memory_mb=0.0001)
    build_index([tmp_path / "c.txt"], tmp_path / "idx", memory_mb=0.01)
    with pytest.raises(ConfigError, match="appears more than once"):
        ngram_check([("a", "x"), ("a", "y")], tmp_path / "idx")
    with pytest.raises(ConfigError, match="min_ratio"):
        ngram_check([("a", "x")], tmp_path / "idx", min_ratio=1.5)


def test_no_corpus_is_skipped_with_a_reason_never_zero() -> None:
    report = ngram_check([("a", "an item")], None)
    assert report.status == "skipped" and report.reason and "no training corpus" in report.reason
    assert report.n_overlapping is None and report.overlap_share is None
    assert report.fp_rate is None and report.score is None
    data = json.loads(report.model_dump_json())
    assert data["n_overlapping"] is None and data["status"] == "skipped"
    assert "skipped" in _text(report)


# -- the score on clean and overlapping items --------------------------------------------------


def _text(report: NgramReport) -> str:
    out = io.StringIO()
    Console(file=out, width=200).print(render_ngram_report(report))
    return out.getvalue()


def _fake_run(scores: dict[str, float]) -> StoredRun:
    rec = RunRecord(
        id="r1",
        model="fake:echo",
        model_name="echo",
        tasks=["t"],
        methodology={},
        methodology_hash="h",
        config={},
    )
    samples = [
        SampleRecord(run_id="r1", task="t", sample_id=i, position=k, prompt={}, scores={"acc": v})
        for k, (i, v) in enumerate(scores.items())
    ]
    samples.append(
        SampleRecord(run_id="r1", task="t", sample_id="err", position=999, prompt={}, error="boom")
    )
    return StoredRun(rec, tuple(samples))


def _wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def test_clean_vs_overlapping_score_by_hand(tmp_path: Path) -> None:
    rng = np.random.default_rng(13)
    items = [(f"q{k}", salad(rng, 25)) for k in range(100)]
    dirty = {f"q{k}" for k in range(0, 100, 5)}  # 20 items in the corpus
    (tmp_path / "c.txt").write_text(
        "\n".join(t for i, t in items if i in dirty) + "\n" + salad(rng, 2000), encoding="utf-8"
    )
    build_index([tmp_path / "c.txt"], tmp_path / "idx", memory_mb=1)
    clean_ids = [i for i, _ in items if i not in dirty]
    scores = {i: 1.0 for i in dirty} | {i: float(k % 2) for k, i in enumerate(clean_ids)}
    report = ngram_check(
        [*items, ("short", "five words are too few")],
        tmp_path / "idx",
        _fake_run(scores | {"short": 1.0}),
    )
    assert set(report.overlapping_ids) == dirty
    split = report.score
    assert split is not None and (split.metric, split.task) == ("acc", "t")
    assert split.n_scored == 100 and split.n_unscored == 0
    # overlapping: 20/20 right; clean: 40/80 right; Newcombe (1998) method 10 by hand
    l1, u1 = _wilson(20, 20)
    l2, u2 = _wilson(40, 80)
    low = 0.5 - math.sqrt((1 - l1) ** 2 + (u2 - 0.5) ** 2)
    high = 0.5 + math.sqrt((u1 - 1) ** 2 + (0.5 - l2) ** 2)
    d = split.difference
    assert d.value == pytest.approx(0.5)
    assert d.low == pytest.approx(low, abs=1e-12) and d.high == pytest.approx(high)
    assert d.method == "newcombe-unpaired" and d.n == 100
    assert split.overlapping.value == 1.0 and split.overlapping.low == pytest.approx(l1)
    assert split.clean.value == 0.5 and split.clean.high == pytest.approx(u2)
    assert "higher" in split.reading
    shown = _text(report)
    assert "100.0 [83.9, 100.0]  n=20" in shown and "50.0 [39.3, 60.7]  n=80" in shown
    assert f"{100 * low:.1f}" in shown and "1 too short" in shown


def test_run_with_several_tasks_needs_the_task_name(tmp_path: Path) -> None:
    (tmp_path / "c.txt").write_text("filler " * 30, encoding="utf-8")
    build_index([tmp_path / "c.txt"], tmp_path / "idx", memory_mb=0.01)
    run = _fake_run({"a": 1.0})
    two = StoredRun(run.record.model_copy(update={"tasks": ["t", "u"]}), run.samples)
    with pytest.raises(ConfigError, match="several tasks"):
        ngram_check([("a", "x " * 20)], tmp_path / "idx", two)
    report = ngram_check([("a", "x " * 20)], tmp_path / "idx", two, task="t")
    assert report.score is not None and report.score.overlapping.is_empty  # NaN, n=0
    assert "empty" in report.score.reading


# -- item texts --------------------------------------------------------------------------------


@needs_mmlu
def test_item_text_is_the_item_not_the_template() -> None:
    cloze = task_item_texts("mmlu", data_dir=DATA, limit=3)
    from calipers.tasks import get_task

    letter = task_item_texts(get_task("mmlu", "letter"), data_dir=DATA, limit=3)
    assert cloze == letter  # the same question and options whatever the formulation
    first = cloze[0][1].split("\n")
    assert first[0].startswith("Find the degree for the given field extension")
    assert first[1:] == ["0", "4", "2", "6"]
    assert "The following are" not in cloze[0][1] and "Answer:" not in cloze[0][1]
