"""Building suites: dedupe counts against brute force, clusters per item, versions that are
immutable and content-hashed, sizes from `calipers plan`, references, secrets never stored."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from calipers.errors import DataError
from calipers.stats import wilson
from calipers.suites import (
    FieldMapping,
    References,
    SizeRationale,
    build_suite,
    content_hash,
    import_logs,
    load_suite,
    suites_home,
    versions,
)
from calipers.suites._profile import likely_typos, share_difference
from tests.suites._logs import SECRETS, production_log

MAP = FieldMapping(input="question", output="answer", id="req_id", accepted="thumbs_up")


def _shingles(t: str) -> set[str]:
    t = " ".join(re.sub(r"[^\w\s]", " ", t.casefold()).split())
    return {t[i : i + 5] for i in range(len(t) - 4)} if len(t) > 5 else {t}


def _brute_force_groups(texts: list[str], threshold: float) -> int:
    """Distinct groups: exact (normalised) first, then connected components of all pairs
    with Jaccard >= threshold: every pair compared, no hashing."""
    norm = [" ".join(re.sub(r"[^\w\s]", " ", t.casefold()).split()) for t in texts]
    uniq = list(dict.fromkeys(norm))
    parent = list(range(len(uniq)))

    def find(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    sets = [_shingles(u) for u in uniq]
    for a in range(len(uniq)):
        for b in range(a + 1, len(uniq)):
            if len(sets[a] & sets[b]) / len(sets[a] | sets[b]) >= threshold:
                parent[find(b)] = find(a)
    return len({find(i) for i in range(len(uniq))})


@pytest.fixture
def imported(tmp_path: Path) -> list[dict[str, Any]]:
    log, rows = production_log(tmp_path)
    rep = import_logs(log, "prod", mapping=MAP)
    assert (rep.n_read, rep.n_imported, rep.n_skipped) == (len(rows), len(rows), 0)
    assert rep.redactions == {k: 1 for k in SECRETS}
    return rows


def test_dedupe_counts_match_brute_force(imported: list[dict[str, Any]]) -> None:
    m = build_suite("prod", backend="tfidf").manifest
    users = [
        r["question"]
        if "question" in r
        else "\n".join(t["content"] for t in r["conversation"] if t["role"] == "user")
        for r in imported
    ]
    assert m.dedupe["n_traffic"] == len(imported) == 63
    assert m.dedupe["n_exact"] == 6
    assert m.dedupe["n_unique"] == _brute_force_groups(users, 0.8)
    assert m.dedupe["n_near"] == 63 - 6 - m.dedupe["n_unique"] >= 4


def test_items_link_to_their_log_line_and_cluster(imported: list[dict[str, Any]]) -> None:
    res = build_suite("prod", backend="tfidf")
    m, items = res.manifest, res.items
    assert m.n_items == m.dedupe["n_unique"] and not m.size.too_small
    names = {c.id: c.name for c in m.clusters}
    for it in items:
        assert it.source.line is not None
        row = imported[it.source.line - 1]  # one record per line
        assert it.source.record_id == row["req_id"]
        assert names[it.cluster.id] == it.cluster.name
        if "conversation" in row:
            assert [t.role for t in it.turns] == ["user", "assistant", "user"]
    assert sum(it.duplicates for it in items) == 63
    assert sum(c.traffic for c in m.clusters) == 63
    assert sum(c.in_suite for c in m.clusters) == m.n_items
    assert m.clustering["backend"] == "tfidf" and m.clustering["k"] == len(m.clusters)


def test_versions_are_immutable_and_content_hashed(imported: list[dict[str, Any]]) -> None:
    first = build_suite("prod", backend="tfidf", seed=3)
    again = build_suite("prod", backend="tfidf", seed=3)
    assert not first.unchanged and again.unchanged
    assert again.manifest.content_hash == first.manifest.content_hash and versions("prod") == [1]
    small = build_suite(
        "prod",
        backend="tfidf",
        seed=3,
        size=SizeRationale(method="size", requested=12, available=0, chosen=0),
    )
    floors = sum(min(2, c.unique) for c in small.manifest.clusters)
    assert small.manifest.version == 2 and small.manifest.n_items == max(12, floors)
    assert small.manifest.content_hash != first.manifest.content_hash
    m1, items1 = load_suite("prod", 1)
    assert m1.content_hash == first.manifest.content_hash == content_hash(items1)
    assert all(c.in_suite >= min(2, c.unique) for c in small.manifest.clusters)
    changed = [items1[0].model_copy(update={"reference": "edited"}), *items1[1:]]
    assert content_hash(changed) != m1.content_hash
    assert content_hash(list(reversed(items1))) == m1.content_hash  # order does not matter
    folder = suites_home() / "prod" / "v1"
    text = (folder / "items.jsonl").read_text().replace("hello there", "hello here")
    (folder / "items.jsonl").write_text(text)
    with pytest.raises(DataError, match="changed after it was built"):
        load_suite("prod", 1)


def test_secrets_appear_nowhere_under_the_suite(imported: list[dict[str, Any]]) -> None:
    build_suite("prod", backend="tfidf")
    files = [p for p in (suites_home() / "prod").rglob("*") if p.is_file()]
    assert len(files) >= 4
    blob = b"".join(p.read_bytes() for p in files)
    for secret in SECRETS.values():
        assert secret.encode() not in blob
        assert json.dumps(secret).encode() not in blob
    assert b"[EMAIL]" in blob and b"[CARD]" in blob


def test_size_from_plan_flags_a_pool_too_small(imported: list[dict[str, Any]]) -> None:
    from calipers.analysis._sizing import plan_size

    p = plan_size(delta=0.05, baseline_acc=0.7)
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    needed = math.ceil(z**2 * (0.7 * 0.3 + 0.75 * 0.25) / 0.05**2)  # Miller 2024, r = 0
    assert p.n_paired == needed
    size = SizeRationale(method="plan", requested=needed, delta=0.05, available=0, chosen=0)
    m = build_suite("prod", backend="tfidf", size=size).manifest
    n = m.dedupe["n_unique"]
    assert m.size.too_small and m.size.chosen == n == m.n_items
    assert f"needs {needed:,} items, the pool has {n:,}" in m.size.notes[0]


@pytest.mark.parametrize("policy", ["accepted", "logged", "none"])
def test_reference_policies(imported: list[dict[str, Any]], policy: References) -> None:
    res = build_suite(
        "prod",
        backend="tfidf",
        references=policy,
        threshold=1.0,
    )
    # threshold 1: only exact duplicates merge; group the log's records the same way
    groups: dict[str, list[int]] = {}
    for n, r in enumerate(imported):
        text = r.get("question") or json.dumps(r["conversation"])
        groups.setdefault(" ".join(text.casefold().rstrip("?").split()), []).append(n)
    assert len(groups) == len(res.items) == 57
    expected = {
        "accepted": sum(any(n % 3 == 0 for n in g) for g in groups.values()),
        "logged": sum(any(n % 3 != 2 for n in g) for g in groups.values()),
        "none": 0,
    }[policy]
    assert sum(it.reference is not None for it in res.items) == expected
    assert res.manifest.references["n_with_reference"] == expected
    if policy == "accepted":
        assert expected > 0
        assert {it.reference_source for it in res.items if it.reference} == {"logged-accepted"}
        for it in res.items:  # the reference is the answer logged with an accepted record
            if it.reference:
                n = int(it.reference.rsplit(" ", 1)[1])
                assert n % 3 == 0 and imported[n]["answer"] == it.reference


def test_profile_matches_the_log(imported: list[dict[str, Any]]) -> None:
    m, items = load_suite("prod", build_suite("prod", backend="tfidf").manifest.version)
    p = m.profile
    multi_log = sum("conversation" in r for r in imported)
    assert p["traffic"]["multi_turn"]["value"] == pytest.approx(multi_log / 63)
    multi_suite = sum(sum(t.role == "user" for t in it.turns) > 1 for it in items)
    assert p["suite"]["multi_turn"]["value"] == pytest.approx(multi_suite / len(items))
    assert p["coverage"]["clusters_covered"] == p["coverage"]["clusters_total"] == len(m.clusters)
    assert p["coverage"]["traffic_share"]["value"] == 1.0
    lengths = sorted(len(it.turns[-1].content) for it in items)
    assert p["suite"]["length_median"]["value"] == pytest.approx(float(np.median(lengths)))


def test_likely_typos_by_hand() -> None:
    texts = ["reset my password"] * 12 + [
        "reset my pasword",
        "my passwrod is lost",
        "teh cat",
        "a rare word",
        "the the the",
    ]
    # pasword: one deletion from password (12 uses); passwrod: a transposition; "teh" is
    # under 4 letters; "rare" has no frequent neighbour
    assert likely_typos(texts) == {"pasword", "passwrod"}


def test_share_difference_matches_newcombe_1998() -> None:
    # Newcombe (1998), Statistics in Medicine 17:873-890, Table II, method 10
    cases = [
        ((56, 70), (48, 80), (0.0524, 0.3339)),
        ((9, 10), (3, 10), (0.1705, 0.8090)),
        ((6, 7), (2, 7), (0.0582, 0.8062)),
        ((5, 56), (0, 29), (-0.0381, 0.1926)),
    ]
    for a, b, (lo, hi) in cases:
        e = share_difference(wilson(*a), wilson(*b))
        assert (round(e.low, 4), round(e.high, 4)) == (lo, hi)


def test_build_without_imports_is_a_data_error() -> None:
    with pytest.raises(DataError, match="no imported records"):
        build_suite("empty")
