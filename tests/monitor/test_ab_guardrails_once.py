"""``analyze_ab`` builds each guardrail once (it used to build all of them twice: once to count
the guardrails in use, once at the alpha that count gives), and the results are the ones the
old two-pass code gave: alpha/2 shared by the guardrails that apply, each effect the planted
difference computed here with numpy."""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from calipers.monitor import _ab
from calipers.monitor._ab import ABConfig, ABResult, run_ab
from calipers.monitor._ab_metrics import effect_at, interleave, two_sample_metric
from calipers.store import Store, TrafficRecord
from tests.monitor._ab_fixtures import Arm, shadow_traffic

N = 500


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(str(tmp_path / "c.db")) as s:
        yield s


def _arrays(records: list[TrafficRecord]) -> dict[str, np.ndarray]:
    by = {(r.pair_id, r.role): r for r in records}
    pairs = sorted({r.pair_id for r in records}, key=lambda p: by[(p, "baseline")].ts)
    b = [by[(p, "baseline")] for p in pairs]
    c = [by[(p, "candidate")] for p in pairs]
    err = np.array([[0.0 if r.ok else 1.0 for r in arm] for arm in (b, c)])
    lat = np.array(
        [
            [math.log(r.latency_ms) if r.ok and r.latency_ms else math.nan for r in arm]
            for arm in (b, c)
        ]
    )
    return {"error": err, "latency": lat}


def _counted(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    calls: Counter[str] = Counter()
    real = _ab.build_guardrail  # type: ignore[attr-defined]

    def counting(name: str, *args: Any, **kw: Any) -> Any:
        calls[name] += 1
        return real(name, *args, **kw)

    monkeypatch.setattr(_ab, "build_guardrail", counting)
    return calls


def test_each_guardrail_is_built_once_and_results_are_unchanged(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = shadow_traffic(
        N,
        Arm(error=0.02, refusal=0.05),
        Arm(error=0.06, refusal=0.05, latency_log_mean=6.1),
        seed=7,
    )
    store.add_traffic(records)
    calls = _counted(monkeypatch)
    r: ABResult = asyncio.run(run_ab(store, ABConfig()))
    assert dict(calls) == dict.fromkeys(_ab.GUARDRAILS, 1)

    rails = {g.name: g for g in r.guardrails}
    assert rails["cost"].status == "skipped"  # no prices: 4 guardrails share alpha/2
    alpha = 0.05 / (2 * 4)
    x = _arrays(records)
    # error rate: the planted difference, with the interval at alpha / 8 (not alpha / 10)
    diff = float(x["error"][1].mean() - x["error"][0].mean())
    assert rails["error_rate"].effect.value == pytest.approx(diff)
    values, treated = interleave(x["error"][0], x["error"][1])
    for a, same in ((alpha, True), (0.05 / 10, False)):
        want = effect_at(
            two_sample_metric("error_rate", values, treated, alpha=a, what="", binary=True)
        )
        got = rails["error_rate"].effect
        assert (got.low == pytest.approx(want.low) and got.high == pytest.approx(want.high)) is same
    # latency p50: ratio of geometric means - 1 over requests both arms answered
    ok = ~np.isnan(x["latency"]).any(axis=0)
    d = x["latency"][1][ok] - x["latency"][0][ok]
    assert rails["latency_p50"].effect.value == pytest.approx(math.expm1(float(d.mean())))
