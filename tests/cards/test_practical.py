"""Practical factors from stored runs, against values computed by hand."""

from __future__ import annotations

import asyncio
import json
import math
import statistics
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from calipers.analysis import StoredRun, load_runs
from calipers.analysis._practical import run_factors, stability
from calipers.cards import ModelCard
from calipers.models import FakeModel
from calipers.runner import RunConfig, arun
from calipers.store import RunRecord, SampleRecord, Store
from calipers.types import ModelRequest

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def card(**pricing: Any) -> ModelCard:
    return ModelCard.model_validate(
        {"name": "priced", "provider": "p", "as_of": "2026-11-30", "pricing": pricing}
    )


def sample(
    i: int,
    *,
    latency: float | None = 0.1,
    tin: int | None = 100,
    tout: int | None = 10,
    cached: bool = False,
    error: str | None = None,
) -> SampleRecord:
    return SampleRecord(
        run_id="r1",
        task="t",
        sample_id=f"s{i}",
        position=i,
        prompt={},
        scores={"acc": 1.0},
        latency_s=latency,
        input_tokens=tin,
        output_tokens=tout,
        cached=cached,
        error=error,
    )


def stored(samples: list[SampleRecord], wall_s: float | None = 100.0) -> StoredRun:
    rec = RunRecord(
        id="r1",
        model="fake:echo",
        model_name="echo",
        tasks=["t"],
        methodology={},
        methodology_hash="h",
        config={},
        created_at=T0,
        status="finished" if wall_s is not None else "interrupted",
        finished_at=T0 + timedelta(seconds=wall_s) if wall_s is not None else None,
    )
    return StoredRun(rec, tuple(samples))


def test_token_cost_per_1000_items_by_hand() -> None:
    run = stored(
        [sample(0, tin=100, tout=10), sample(1, tin=200, tout=20), sample(2, tin=300, tout=30)]
    )
    f = run_factors(run, card=card(input_usd_per_mtok=2.5, output_usd_per_mtok=10.0))
    # per item: (100*2.5 + 10*10)/1e6 = 350e-6, then 700e-6 and 1050e-6; mean 700e-6
    assert f.cost_per_1000_usd is not None
    assert f.cost_per_1000_usd.value == pytest.approx(0.7)
    assert f.cost_per_1000_usd.low <= 0.7 <= f.cost_per_1000_usd.high
    assert f.cost_per_1000_usd.n == 3 and "card 'priced'" in f.cost_basis
    assert f.input_tokens_per_item is not None and f.input_tokens_per_item.value == 200
    assert f.output_tokens_per_item is not None and f.output_tokens_per_item.value == 20


def test_hardware_cost_and_throughput_by_hand() -> None:
    run = stored([sample(i) for i in range(50)] + [sample(50, error="boom")], wall_s=100.0)
    f = run_factors(run, hardware_cost_per_hour=3.6)
    # $3.6/hour x 100 s = $0.10 for 50 completed items -> $2.00 per 1,000
    assert f.cost_per_1000_usd is not None and f.cost_per_1000_usd.value == pytest.approx(2.0)
    assert math.isnan(f.cost_per_1000_usd.low)  # one run: no interval, and it says so
    assert "no interval" in f.cost_per_1000_usd.method
    assert f.items_per_s == pytest.approx(0.5) and f.wall_s == 100.0
    assert (f.n_items, f.n_ok, f.n_errors) == (51, 50, 1)
    # a card's hardware price is used when it has no token prices
    g = run_factors(run, card=card(hardware_usd_per_hour=7.2))
    assert g.cost_per_1000_usd is not None and g.cost_per_1000_usd.value == pytest.approx(4.0)


def test_missing_prices_and_measurements_are_none_never_zero() -> None:
    run = stored([sample(0, tin=None, tout=None, latency=None)], wall_s=None)
    f = run_factors(run, card=card(input_usd_per_mtok=1.0))
    assert f.cost_per_1000_usd is None and f.cost_basis.startswith("missing: card 'priced'")
    f = run_factors(run)
    assert f.cost_per_1000_usd is None and "no model card" in f.cost_basis
    assert f.input_tokens_per_item is None and f.output_tokens_per_item is None
    assert f.latency_p50_s is None and f.items_per_s is None and f.wall_s is None
    f = run_factors(run, card=card(input_usd_per_mtok=1.0, output_usd_per_mtok=1.0))
    assert f.cost_per_1000_usd is None and "token counts" in f.cost_basis
    f = run_factors(run, hardware_cost_per_hour=1.0)
    assert f.cost_per_1000_usd is None and "wall time" in f.cost_basis
    d = f.to_dict()
    assert d["latency_p50_s"] is None and d["items_per_s"] is None


def test_latency_quantiles_exclude_cached_responses_and_errors() -> None:
    lat = [0.01 * (i + 1) for i in range(100)]  # 0.01 .. 1.00
    samples = [sample(i, latency=v) for i, v in enumerate(lat)]
    samples += [sample(100 + i, latency=0.0001, cached=True) for i in range(40)]
    samples += [sample(200, latency=99.0, error="timeout")]
    f = run_factors(stored(samples))
    assert f.n_timed == 100 and f.n_cached == 40
    assert f.latency_p50_s is not None and f.latency_p95_s is not None
    assert f.latency_p50_s.value == pytest.approx(np.quantile(lat, 0.5))
    # order statistics 40 and 61 bound the median of 100 values (see test_quantile)
    assert (f.latency_p50_s.low, f.latency_p50_s.high) == pytest.approx((0.40, 0.61))
    assert f.latency_p95_s.value == pytest.approx(np.quantile(lat, 0.95))
    assert any("cache" in n for n in f.notes)
    d = f.to_dict()
    assert json.loads(json.dumps(d))["latency_p50_s"]["method"] == "order-statistic"


@pytest.fixture
def yes_task(tmp_path: Path) -> Path:
    rows = [{"id": f"q{i}", "input": f"item {i}", "target": "yes"} for i in range(20)]
    (tmp_path / "yes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = tmp_path / "yes.yaml"
    spec.write_text("name: answers\ndata: yes.jsonl\nscorers: [exact_match]\n")
    return spec


def right_below(k: int) -> FakeModel:
    def answer(req: ModelRequest) -> str:
        assert req.messages is not None
        i = int(req.messages[-1].content.split()[1])
        return "yes" if i < k else "no"

    return FakeModel(answer, name="m")


def make_run(spec: Path, model: FakeModel) -> str:
    config = RunConfig(model="fake:m", tasks=(str(spec),), use_cache=False)
    with Store.open() as store:
        return asyncio.run(arun(config, store, provider=model)).run_id


def fake_runs(spec: Path, ks: list[int]) -> list[StoredRun]:
    ids = [make_run(spec, right_below(k)) for k in ks]
    with Store.open() as store:
        return load_runs(store, ids)


def test_stability_across_runs_by_hand(yes_task: Path) -> None:
    runs = fake_runs(yes_task, [10, 12, 16])
    [row] = stability(runs)
    values = [10 / 20, 12 / 20, 16 / 20]
    assert row.model == "m" and row.task == "answers" and row.metric == "exact_match"
    assert row.n_runs == 3 and list(row.values) == pytest.approx(values)
    assert row.sd == pytest.approx(statistics.stdev(values))
    assert (row.min, row.max) == pytest.approx((0.5, 0.8))
    assert row.mean == pytest.approx(statistics.mean(values)) and row.same_methodology
    [single] = stability(runs[:1])
    assert single.n_runs == 1 and single.sd is None


def test_factors_of_a_fake_model_run(yes_task: Path) -> None:
    [run] = fake_runs(yes_task, [5])
    f = run_factors(run, card=card(input_usd_per_mtok=1.0, output_usd_per_mtok=2.0))
    ok = [s for s in run.samples if s.error is None]
    tin = [s.input_tokens or 0 for s in ok]
    tout = [s.output_tokens or 0 for s in ok]
    assert f.n_ok == 20 and f.n_timed == 20 and f.n_cached == 0
    assert f.input_tokens_per_item is not None
    assert f.input_tokens_per_item.value == pytest.approx(statistics.mean(tin))
    expected = 1000 * statistics.mean(
        a * 1.0 / 1e6 + b * 2.0 / 1e6 for a, b in zip(tin, tout, strict=True)
    )
    assert f.cost_per_1000_usd is not None
    assert f.cost_per_1000_usd.value == pytest.approx(expected)
    assert f.items_per_s is not None and f.items_per_s > 0
