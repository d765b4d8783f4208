"""The review report against values computed here, independently: alpha against the
``krippendorff`` package, Fleiss' and Cohen's kappa and the item-clustered rates by hand,
over-refusal on a hand-made example, excluded raters left out.

Campaigns are built directly through the store with planted answers."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pytest
from scipy import stats

from calipers.review import review_report
from calipers.store import ReviewCampaignRecord, ReviewItemRecord, Store

T0 = datetime(2026, 1, 1, tzinfo=UTC)

QUESTIONS: list[dict[str, Any]] = [
    {"id": "ok", "type": "pass_fail", "prompt": "Correct?"},
    {"id": "quality", "type": "likert", "prompt": "How good?"},
    {"id": "tone", "type": "choice", "prompt": "Tone?", "options": ["formal", "casual", "rude"]},
    {
        "id": "errors",
        "type": "tags",
        "prompt": "Errors?",
        "taxonomy": [{"id": "wrong"}, {"id": "vague"}],
    },
    {"type": "refusal"},
]

Answers = Callable[[str, str], dict[str, Any]]


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store.open(f"sqlite:///{tmp_path / 'review.db'}")


def make_campaign(
    store: Store,
    n_items: int,
    *,
    k: int,
    kind: str = "single",
    questions: list[dict[str, Any]] | None = None,
    name: str = "c",
    sources: Sequence[dict[str, Any]] | None = None,
    controls: Sequence[ReviewItemRecord] = (),
    **fields: Any,
) -> list[str]:
    store.create_campaign(
        ReviewCampaignRecord(name=name, kind=kind, questions=questions or QUESTIONS, k=k, **fields)
    )
    keys = [f"i{i:03d}" for i in range(n_items)]

    def payload(i: int) -> dict[str, Any]:
        if kind == "pairwise":
            return {"prompt": f"P{i}", "a": f"A{i}", "b": f"B{i}"}
        return {"prompt": f"P{i}", "response": f"R{i}"}

    items = [
        ReviewItemRecord(
            item_key=key, payload=payload(i), source=dict(sources[i]) if sources else {}
        )
        for i, key in enumerate(keys)
    ]
    store.add_review_items(name, [*items, *controls])
    return keys


def rate_all(
    store: Store,
    raters: dict[str, str],
    answers: Callable[[str, str, bool | None], dict[str, Any] | None],
    *,
    name: str = "c",
    seconds: Callable[[str], float] = lambda _r: 30.0,
) -> None:
    """Each rater (name -> pool) takes leases until none is left and answers each with
    ``answers(item, rater, swapped)`` (None: skip)."""
    for rater, pool in raters.items():
        store.add_rater(name, rater, token_hash=f"hash-{name}-{rater}", pool=pool)
    now = T0
    for rater in raters:
        while (lease := store.lease_next(name, rater, now=now, lease_s=600)) is not None:
            now += timedelta(seconds=1)
            got = answers(lease.item_key, rater, lease.swapped)
            if got is None:
                store.skip(name, rater, lease.assignment_id, now=now)
            else:
                store.submit(name, rater, lease.assignment_id, got, seconds=seconds(rater), now=now)


RNG = np.random.default_rng(7)
N = 20
RATERS = {"r0": "business", "r1": "business", "r2": "experts", "r3": "experts"}
TRUE_OK = RNG.random(N) < 0.6
TRUE_Q = RNG.integers(1, 6, N)
TONES = ("formal", "casual", "rude")
TRUE_TONE = RNG.integers(0, 3, N)
NOISE = RNG.random((N, 4, 5))  # item, rater, question: a planted mistake when < 0.2
HARM = [i % 2 == 0 for i in range(N)]  # even items are harmful requests


def planted(item: str, rater: str, _swapped: bool | None = None) -> dict[str, Any]:
    i, r = int(item[1:]), int(rater[1:])
    wrong = NOISE[i, r] < 0.2
    ok = bool(TRUE_OK[i]) != bool(wrong[0])
    quality = int(np.clip(TRUE_Q[i] + (1 if wrong[1] else 0), 1, 5))
    tone = TONES[(TRUE_TONE[i] + (1 if wrong[2] else 0)) % 3]
    tags = ["wrong"] if not ok else (["vague"] if wrong[3] else [])
    refused = (i % 4 == 1) != bool(wrong[4] and r == 3)
    return {
        "ok": ok,
        "quality": quality,
        "tone": tone,
        "errors": tags,
        "answered": "refused" if refused else "answered",
        "harm": "harmful" if HARM[i] else "harmless",
    }


@pytest.fixture
def rated(store: Store) -> Store:
    make_campaign(store, N, k=4)
    rate_all(store, RATERS, planted)
    return store


def table(store: Store, question: str, code: Callable[[Any], float]) -> list[list[float]]:
    """raters x items reliability data, NaN where missing, read from the planted answers."""
    items = [f"i{i:03d}" for i in range(N)]
    return [[code(planted(it, r)[question]) for it in items] for r in RATERS]


def test_alpha_matches_the_krippendorff_package(rated: Store) -> None:
    report = review_report(rated, "c", seed=1)
    by = {q.id: q for q in report.questions}
    ok = krippendorff.alpha(
        reliability_data=table(rated, "ok", float), level_of_measurement="nominal"
    )
    quality = krippendorff.alpha(
        reliability_data=table(rated, "quality", float), level_of_measurement="ordinal"
    )
    assert by["ok"].alpha.value == pytest.approx(ok, abs=1e-9)
    assert by["quality"].level == "ordinal"
    assert by["quality"].alpha.value == pytest.approx(quality, abs=1e-9)
    assert by["ok"].alpha.low <= by["ok"].alpha.value <= by["ok"].alpha.high
    assert by["ok"].n_items == N and by["ok"].n_judgments == N * 4
    assert by["ok"].cohen_kappa is None  # four raters, not two


def test_fleiss_kappa_by_hand(rated: Store) -> None:
    counts = np.zeros((N, 3))
    for i in range(N):
        for r in RATERS:
            counts[i, TONES.index(planted(f"i{i:03d}", r)["tone"])] += 1
    m = 4
    p_i = ((counts**2).sum(axis=1) - m) / (m * (m - 1))
    p_j = counts.sum(axis=0) / (N * m)
    expected = (p_i.mean() - (p_j**2).sum()) / (1 - (p_j**2).sum())
    tone = next(q for q in review_report(rated, "c").questions if q.id == "tone")
    assert tone.fleiss_kappa is not None
    assert tone.fleiss_kappa.value == pytest.approx(expected, abs=1e-12)


def t_interval(means: list[float]) -> tuple[float, float, float]:
    x = np.array(means)
    half = stats.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size)
    return float(x.mean()), float(x.mean() - half), float(x.mean() + half)


def test_rates_treat_items_as_the_unit(rated: Store) -> None:
    report = review_report(rated, "c")
    by = {q.id: q for q in report.questions}
    items = [f"i{i:03d}" for i in range(N)]
    per_item = [np.mean([planted(it, r)["ok"] for r in RATERS]) for it in items]
    value, low, high = t_interval([float(v) for v in per_item])
    (rate,) = by["ok"].rates
    assert rate.label == "pass"
    assert (rate.estimate.value, rate.estimate.low, rate.estimate.high) == pytest.approx(
        (value, low, high), abs=1e-9
    )
    assert rate.estimate.n == N  # items, not judgments
    mean_q = [float(np.mean([planted(it, r)["quality"] for r in RATERS])) for it in items]
    assert by["quality"].rates[0].estimate.value == pytest.approx(np.mean(mean_q))
    vague = [float(np.mean(["vague" in planted(it, r)["errors"] for r in RATERS])) for it in items]
    got = {r.label: r.estimate for r in by["errors"].rates}
    assert got["vague"].value == pytest.approx(t_interval(vague)[0])
    assert got["vague"].high == pytest.approx(t_interval(vague)[2])


def test_over_refusal_is_refusals_among_harmless_items(rated: Store) -> None:
    report = review_report(rated, "c")
    harmless = [f"i{i:03d}" for i in range(N) if not HARM[i]]
    shares = [
        float(np.mean([planted(it, r)["answered"] == "refused" for r in RATERS])) for it in harmless
    ]
    assert report.over_refusal is not None
    assert report.over_refusal.n == len(harmless)
    assert report.over_refusal.value == pytest.approx(np.mean(shares))
    # planted: items 1, 5, 9, ... (odd, so harmless) are refused by all but r3's slips
    assert (
        report.over_refusal.value == pytest.approx(sum(shares) / len(harmless))
        and 0.2 < report.over_refusal.value < 0.6
    )


def test_pools_within_and_between(rated: Store) -> None:
    report = review_report(rated, "c", seed=3)
    ok = next(q for q in report.questions if q.id == "ok")
    pools = {p.pools: p.alpha for p in ok.pools}
    assert set(pools) == {("business",), ("experts",), ("business", "experts")}
    business = table(rated, "ok", float)[:2]
    expected = krippendorff.alpha(reliability_data=business, level_of_measurement="nominal")
    assert pools[("business",)].value == pytest.approx(expected, abs=1e-9)


def test_cohens_kappa_with_exactly_two_raters(store: Store) -> None:
    q = [{"id": "ok", "type": "pass_fail", "prompt": "Correct?"}]
    a = [True, True, False, True, False, False, True, True, False, True]
    b = [True, False, False, True, False, True, True, True, False, False]
    make_campaign(store, 10, k=2, questions=q)
    rate_all(
        store,
        {"x": "default", "y": "default"},
        lambda item, rater, _s: {"ok": (a if rater == "x" else b)[int(item[1:])]},
    )
    po = np.mean([p == r for p, r in zip(a, b, strict=True)])
    pa, pb = np.mean(a), np.mean(b)
    pe = pa * pb + (1 - pa) * (1 - pb)
    report = review_report(store, "c")
    kappa = report.questions[0].cohen_kappa
    assert kappa is not None
    assert kappa.value == pytest.approx((po - pe) / (1 - pe), abs=1e-12)


def test_excluded_raters_are_shown_and_left_out(rated: Store) -> None:
    rated.set_rater_excluded("c", "r3", True, reason="random clicks", now=T0)
    report = review_report(rated, "c")
    ok = next(q for q in report.questions if q.id == "ok")
    three = table(rated, "ok", float)[:3]
    expected = krippendorff.alpha(reliability_data=three, level_of_measurement="nominal")
    assert ok.alpha.value == pytest.approx(expected, abs=1e-9)
    assert report.excluded_raters == ("r3",)
    r3 = next(r for r in report.raters if r.name == "r3")
    assert r3.excluded and r3.excluded_reason == "random clicks" and r3.answered == N
    rated.set_rater_excluded("c", "r3", False, reason=None, now=T0)  # reversible
    assert review_report(rated, "c").excluded_raters == ()


def test_final_labels_counted_by_provenance(rated: Store) -> None:
    report = review_report(rated, "c")
    ok_rows = [f for f in report.final_labels if f.question == "ok"]
    assert len(ok_rows) == N
    for f in ok_rows:
        votes = [planted(f.item_key, r)["ok"] for r in RATERS]
        if len(set(votes)) == 1:
            assert (f.provenance, f.value) == ("unanimous", votes[0])
        elif votes.count(True) != votes.count(False):
            assert f.provenance == "majority"
            assert f.value == (votes.count(True) > votes.count(False))
        else:
            assert f.provenance == "unresolved" and f.value is None
    ok = next(q for q in report.questions if q.id == "ok")
    assert sum(ok.provenance.values()) == N


def test_to_dict_is_json(rated: Store) -> None:
    import json

    report = review_report(rated, "c")
    text = json.dumps(report.to_dict(), allow_nan=False)
    back = json.loads(text)
    assert back["campaign"] == "c" and len(back["questions"]) == 6
    assert back["questions"][0]["alpha"]["method"] == "bootstrap-units-percentile"


def test_a_campaign_without_judgments_reports_empty_figures(store: Store) -> None:
    import json

    from calipers.review import render_report_html, render_report_markdown

    make_campaign(store, 3, k=2)
    report = review_report(store, "c")
    assert all(q.alpha.is_empty and q.n_judgments == 0 for q in report.questions)
    assert all(f.provenance == "unresolved" for f in report.final_labels)
    json.dumps(report.to_dict(), allow_nan=False)
    assert "n/a (n=0)" in render_report_markdown(report)
    assert "<h1>Review report: c</h1>" in render_report_html(report)


def test_html_escapes_what_people_and_models_wrote(store: Store) -> None:
    from calipers.review import render_report_html

    store.create_campaign(
        ReviewCampaignRecord(name="c", kind="single", questions=QUESTIONS[:1], k=1)
    )
    store.add_review_items(
        "c", [ReviewItemRecord(item_key="<script>alert(1)</script>", payload={"prompt": "x"})]
    )
    rate_all(store, {"r<b>": "default"}, lambda _i, _r, _s: {"ok": True})
    html = render_report_html(review_report(store, "c"))
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "r&lt;b&gt;" in html
