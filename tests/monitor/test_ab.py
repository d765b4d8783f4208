"""``calipers ab`` end to end on synthetic traffic in a SQLite store: a better candidate is
promoted, a worse one rolled back, an identical one watched; scores are stored once."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from calipers.errors import ConfigError, DataError
from calipers.monitor._ab import ABConfig, ABResult, analyze_ab, run_ab
from calipers.monitor._online import parse_scorer, sample_exchanges, score_exchanges
from calipers.monitor._traffic import load_exchanges
from calipers.store import OnlineScoreRecord, Store, TrafficRecord
from tests.monitor._ab_fixtures import Arm, canary_traffic, judge_script, shadow_traffic

PRICES = {"baseline": {"input": 0.15, "output": 0.60}, "candidate": {"input": 0.15, "output": 0.60}}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(str(tmp_path / "c.db")) as s:
        yield s


def _run(store: Store, **kw: object) -> ABResult:
    return asyncio.run(run_ab(store, ABConfig(**kw)))


def _rail(result: ABResult, name: str) -> tuple[str, float, float]:
    g = next(g for g in result.guardrails if g.name == name)
    return g.status, g.effect.low, g.effect.high


def test_a_better_faster_candidate_is_promoted(store: Store, tmp_path: Path) -> None:
    # Judge: 75% GOOD answers against 50%; latency 10% lower; the same errors (none),
    # refusals (none) and prices.
    store.add_traffic(
        shadow_traffic(800, Arm(good=0.5), Arm(good=0.75, latency_log_mean=5.9), seed=1)
    )
    r = _run(
        store, scorers=("llm_judge:helpfulness",), judge_model=judge_script(tmp_path), prices=PRICES
    )
    assert r.action == "promote" and r.exit_code == 0, r.decision.reasons
    assert r.mode == "shadow" and r.counts["used"] == 800
    p = r.primary
    assert p is not None and p.name == "llm_judge:helpfulness" and p.effect.n == 800
    assert p.effect.low <= 0.25 <= p.effect.high and p.effect.low > 0
    # The judge's own scores: the paired mean difference equals the plain one.
    scores = {
        (s.pair_id, s.role): s.value
        for s in store.get_online_scores(scorer="llm_judge:helpfulness")
    }
    plain = np.mean(
        [
            scores[(e.pair_id, "candidate")] - scores[(e.pair_id, "baseline")]
            for e in load_exchanges(store)
        ]
    )
    assert p.effect.value == pytest.approx(plain)
    status, low, high = _rail(r, "latency_p50")
    assert status == "safe" and low <= math.expm1(-0.1) <= high
    assert all(g.status == "safe" for g in r.guardrails)
    assert r.path and len(r.path) <= 200 and r.path[-1]["n"] == 800
    json.dumps(r.to_dict(), allow_nan=False)  # strict JSON for the web UI


def test_a_candidate_with_ten_times_the_errors_is_rolled_back(store: Store) -> None:
    store.add_traffic(shadow_traffic(600, Arm(error=0.01), Arm(error=0.10), seed=2))
    r = _run(store)
    assert r.action == "roll_back" and r.exit_code == 1
    status, low, high = _rail(r, "error_rate")
    assert status == "failing" and low <= 0.09 <= high and low > 0.01
    assert any(reason.startswith("error_rate: worse") for reason in r.decision.reasons)
    assert r.primary is None and "no quality scorer" in r.decision.reasons[0]
    cost = next(g for g in r.guardrails if g.name == "cost")
    assert cost.status == "skipped" and "--price" in (cost.skipped or "")


def test_identical_models_keep_watching(store: Store, tmp_path: Path) -> None:
    store.add_traffic(
        shadow_traffic(600, Arm(error=0.02, refusal=0.05), Arm(error=0.02, refusal=0.05), seed=3)
    )
    r = _run(
        store, scorers=("llm_judge:helpfulness",), judge_model=judge_script(tmp_path), prices=PRICES
    )
    assert r.action == "keep_watching" and r.exit_code == 2, r.decision.reasons
    assert r.primary is not None and r.primary.effect.low < 0 < r.primary.effect.high
    _status, low, high = _rail(r, "refusal_rate")
    assert low < 0 < high
    refusals = store.get_online_scores(scorer="refusal")
    rate = np.mean([s.value for s in refusals])
    assert 0.03 < rate < 0.07  # the refusal patterns find the planted refusals


def test_canary_compares_the_user_groups(store: Store) -> None:
    store.add_traffic(canary_traffic(1500, Arm(error=0.01), Arm(error=0.12), seed=4, keyless=40))
    r = _run(store)
    assert r.mode == "canary" and r.action == "roll_back"
    assert r.counts["no_user_key"] == 40 and r.counts["used"] == 1500
    assert r.counts["baseline"] + r.counts["candidate"] == 1500
    status, low, high = _rail(r, "error_rate")
    assert status == "failing" and low <= 0.11 <= high
    same = canary_traffic(1500, Arm(), Arm(), seed=5)
    with Store.open(str(Path(str(store.url).removeprefix("sqlite:///")).parent / "b.db")) as s2:
        s2.add_traffic(same)
        assert _run(s2).action == "keep_watching"


def test_hourly_looks_reuse_stored_scores(store: Store, tmp_path: Path) -> None:
    store.add_traffic(shadow_traffic(200, Arm(), Arm(), seed=6))
    cfg = {
        "scorers": ("llm_judge:helpfulness",),
        "judge_model": judge_script(tmp_path),
        "sample": 50,
        "seed": 7,
    }
    first = _run(store, **cfg)
    by_key = {s.key: s for s in first.scoring}
    assert by_key["llm_judge:helpfulness"].scored == 100  # 50 requests x 2 arms
    assert by_key["refusal"].scored == 400
    store.add_traffic(shadow_traffic(100, Arm(), Arm(), seed=6, start=200))
    again = {s.key: s for s in _run(store, **cfg).scoring}
    assert again["refusal"].scored == 200 and again["refusal"].reused == 400
    judged = again["llm_judge:helpfulness"]
    assert judged.scored + judged.reused >= 100 and judged.scored <= 100
    # The sample is the same seeded choice as the first look, where it can be.
    ex = load_exchanges(store)
    picked = {e.pair_id for e in sample_exchanges(ex, 50, 7)}
    before = {e.pair_id for e in sample_exchanges(ex[:200], 50, 7)}
    assert len(picked & before) >= 25


def test_judge_failures_are_nan_with_the_reason_and_pairwise_is_stored_once(
    store: Store, tmp_path: Path
) -> None:
    store.add_traffic(shadow_traffic(5, Arm(), Arm(), seed=8))
    ex = load_exchanges(store)
    broken = parse_scorer("llm_judge:helpfulness", judge_model="fake:const=no verdict")
    script = tmp_path / "pairwise.json"
    script.write_text(json.dumps({"*": '{"reasoning": "first", "winner": "1"}'}))
    pairwise = parse_scorer("llm_judge_pairwise", judge_model=f"fake:script={script}")
    reports = asyncio.run(score_exchanges(store, ex, [broken, pairwise]))
    assert reports[0].failed == 10 and "no readable verdict" in (reports[0].first_error or "")
    stored = store.get_online_scores(scorer="llm_judge:helpfulness")
    assert len(stored) == 10 and all(math.isnan(s.value) for s in stored)
    pw = store.get_online_scores(scorer="llm_judge_pairwise")
    # A judge that always picks the first answer is inconsistent: a tie, 0.5, every time.
    assert [(s.role, s.value) for s in pw] == [("candidate", 0.5)] * 5
    assert pw[0].details and pw[0].details["consistent"] is False
    again = asyncio.run(score_exchanges(store, ex, [broken, pairwise]))
    assert (again[0].scored, again[0].failed, again[0].reused) == (0, 0, 10)
    assert again[1].reused == 5


def test_user_feedback_stored_by_others_can_be_the_primary_metric(store: Store) -> None:
    store.add_traffic(shadow_traffic(300, Arm(), Arm(), seed=9))
    rng = np.random.default_rng(0)
    store.add_online_scores(
        [
            OnlineScoreRecord(
                pair_id=e.pair_id,
                role=role,
                scorer="feedback",
                value=float(rng.random() < (0.9 if role == "candidate" else 0.5)),
            )
            for e in load_exchanges(store)
            for role in ("baseline", "candidate")
        ]
    )
    r = _run(store, scorers=("feedback",))
    assert r.primary is not None and r.primary.effect.low > 0.25
    assert r.primary.status == "better"


def test_clear_errors_for_missing_or_mixed_traffic(store: Store, tmp_path: Path) -> None:
    with pytest.raises(DataError, match="No gateway traffic"):
        analyze_ab(store, ABConfig())
    store.add_traffic(shadow_traffic(20, Arm(), Arm(), seed=10, mirrored=0.0))
    with pytest.raises(DataError, match="has a candidate answer"):
        analyze_ab(store, ABConfig())
    store.add_traffic(canary_traffic(20, Arm(), Arm(), seed=11))
    with pytest.raises(ConfigError, match=r"shadow .* and canary"):
        analyze_ab(store, ABConfig())
    assert analyze_ab(store, ABConfig(mode="canary")).mode == "canary"
    with pytest.raises(ConfigError, match="needs a judge model"):
        parse_scorer("llm_judge:helpfulness")
    with pytest.raises(ConfigError, match="No built-in rubric"):
        parse_scorer("llm_judge:kindness", judge_model="fake:echo")
    with pytest.raises(ValueError, match="unknown guardrail"):
        ABConfig(tolerances={"latency_p99": 0.1})


def test_pairwise_in_canary_and_missing_tokens_are_skipped_not_zero(store: Store) -> None:
    store.add_traffic(canary_traffic(300, Arm(tokens=False), Arm(tokens=False), seed=12))
    r = analyze_ab(
        store, ABConfig(scorers=("llm_judge_pairwise",), judge_model="fake:echo", prices=PRICES)
    )
    assert r.primary is not None and r.primary.status == "skipped"
    assert "shadow traffic only" in (r.primary.skipped or "")
    assert math.isnan(r.primary.effect.value)
    cost = next(g for g in r.guardrails if g.name == "cost")
    assert cost.status == "skipped" and "token counts" in (cost.skipped or "")
    d = r.to_dict()
    assert d["primary"]["effect"]["value"] is None and d["decision"] == "keep_watching"


def _outage(n_healthy: int, n_down: int, **kw: float) -> list[TrafficRecord]:
    """Both arms at 1% errors, then the candidate at 29% (+28 points) for ``n_down``."""
    healthy = shadow_traffic(n_healthy, Arm(error=0.01), Arm(error=0.01), seed=21)
    down = shadow_traffic(n_down, Arm(error=0.01), Arm(error=0.29), seed=22, start=n_healthy)
    return healthy + down


def test_an_outage_that_empties_the_sequence_is_rolled_back(store: Store) -> None:
    # A long healthy stretch narrows the error rate's sequence around 0; then the candidate
    # fails 29% of the time. No single effect fits every look (the sequence is empty), and at
    # the last looks the effect is surely beyond the 1-point tolerance: roll back, and say so.
    store.add_traffic(_outage(3000, 400))
    r = _run(store)
    rail = next(g for g in r.guardrails if g.name == "error_rate")
    assert rail.effect.method.endswith("-empty") and rail.crossed is not None
    low, high = rail.crossed
    assert low > high and low > 0.01  # shown above the tolerance at a look
    # Independently: the plain error-rate difference over the window is 28 * 400 / 3400
    # points in expectation; the bound shown at a look cannot exceed the largest running one.
    rows = load_exchanges(store)
    diffs = [
        (e.candidate is not None and not e.candidate.ok) - (not e.baseline.ok)
        for e in rows
        if e.baseline is not None
    ]
    running_max = max(np.cumsum(diffs)[99:] / np.arange(100, len(diffs) + 1))
    assert low < running_max and np.mean(diffs) > 0.02
    assert rail.p_value < 1e-12
    assert rail.status == "failing" and r.action == "roll_back" and r.exit_code == 1
    why = next(x for x in r.decision.reasons if x.startswith("error_rate:"))
    assert "moved" in why and "tolerance 0.01" in why and rail.reason == why
    assert r.to_dict()["guardrails"][0]["status"] == "failing"
    json.dumps(r.to_dict(), allow_nan=False)
